/// The life of a ``ReconnectingWebSocket``: the idle/running/completed/cancelled machine of
/// a stream, grown for reconnects.
///
/// A pure value: events come in (an attempt failed, a connection ended, the backoff
/// elapsed, the user closed), the next action goes out (connect, wait, finish). Time and
/// randomness are passed in, so tests drive it without clocks or sockets.
struct ReconnectStateMachine {
    typealias State = ReconnectingWebSocket.State

    enum Action: Equatable, Sendable {
        /// Open connection number `attempt`.
        case connect(attempt: Int)
        /// Wait `delay`, then call ``retryDue()``.
        case wait(Duration, cause: WebSocketError)
        /// The socket is over; `state` is terminal.
        case finish(State)
    }

    let policy: ReconnectPolicy
    private(set) var state: State = .idle
    /// Consecutive failures (attempts or short-lived connections) since the last connection
    /// that stayed up for `minimumUptime`; drives the backoff delay.
    private(set) var failedAttempts = 0
    /// Connection attempts since the last stable connection; shown in `.connecting(attempt:)`.
    private var attemptsSinceStable = 0
    private var connectedAt: ContinuousClock.Instant?
    /// The terminal state asked for by the user (close or cancellation), if any.
    private(set) var requestedEnd: State?
    /// Attempts started in the socket's whole life: the number of the current one (1-based).
    private(set) var attemptNumber = 0
    /// Why the last attempt failed or the last connection ended; `nil` before the first.
    private(set) var previousError: WebSocketError?
    /// Whether an upgrade refused with 401 or 403 is retried at once, once: a `prepare`
    /// hook is set, and can fetch fresh credentials for the retry.
    let refreshesCredentials: Bool
    /// Whether the current attempt is that immediate retry (a second refusal is then
    /// decided by the policy).
    private var isCredentialRetry = false

    init(policy: ReconnectPolicy, refreshesCredentials: Bool = false) {
        self.policy = policy
        self.refreshesCredentials = refreshesCredentials
    }

    /// Whether the socket has ended.
    var isFinished: Bool { state.isTerminal }

    /// The first use of the socket.
    mutating func start() -> Action {
        guard case .idle = state else { return .finish(state) }
        return nextAttempt()
    }

    /// A connection attempt failed with `error`.
    mutating func attemptFailed(_ error: WebSocketError, random: Double) -> Action {
        if let requestedEnd { return finish(requestedEnd) }
        previousError = error
        failedAttempts += 1
        if refreshesCredentials, !isCredentialRetry, Self.isCredentialRefusal(error) {
            if let maxAttempts = policy.maxAttempts, failedAttempts >= maxAttempts {
                return finish(.failed(error))
            }
            // The credentials were refused: `prepare` gets another go at once, told why.
            isCredentialRetry = true
            return nextAttempt()
        }
        isCredentialRetry = false
        return decide(after: error, uptime: nil, random: random)
    }

    /// The `prepare` hook threw (`error` wraps what it threw): the socket ends with it,
    /// unless an end was already requested.
    mutating func prepareFailed(_ error: WebSocketError) -> Action {
        if let requestedEnd { return finish(requestedEnd) }
        return finish(.failed(error))
    }

    /// Whether `error` is an upgrade refused for its credentials (401 or 403).
    static func isCredentialRefusal(_ error: WebSocketError) -> Bool {
        error.code == .handshakeRejected && (error.httpStatus == 401 || error.httpStatus == 403)
    }

    /// The attempt succeeded.
    mutating func connected(subprotocol: String?, at now: ContinuousClock.Instant) {
        guard requestedEnd == nil else { return }
        isCredentialRetry = false
        connectedAt = now
        state = .connected(subprotocol: subprotocol)
    }

    /// The open connection ended; `error` says how (``WebSocketError/closed(code:reason:)``
    /// for a close handshake or TCP loss, or the error that ended it).
    mutating func connectionEnded(_ error: WebSocketError, at now: ContinuousClock.Instant, random: Double) -> Action {
        let uptime = connectedAt.map { now - $0 }
        connectedAt = nil
        if let requestedEnd { return finish(requestedEnd) }
        previousError = error
        isCredentialRetry = false
        if let uptime, uptime >= policy.minimumUptime {
            failedAttempts = 0
            attemptsSinceStable = 0
        }
        failedAttempts += 1
        return decide(after: error, uptime: uptime, random: random)
    }

    /// The backoff delay elapsed.
    mutating func retryDue() -> Action {
        if let requestedEnd { return finish(requestedEnd) }
        return nextAttempt()
    }

    /// The user closed the socket (`.completed`) or ended its iteration (`.cancelled`).
    /// Returns `false` when it had already ended or an end was already requested.
    mutating func requestEnd(_ end: State) -> Bool {
        guard !state.isTerminal, requestedEnd == nil else { return false }
        requestedEnd = end
        if case .idle = state {
            state = end
        }
        return true
    }

    /// Moves to the terminal state (when the supervisor has nothing left to wind down).
    mutating func finish(_ end: State) -> Action {
        if !state.isTerminal { state = end }
        return .finish(state)
    }

    private mutating func nextAttempt() -> Action {
        attemptNumber += 1
        attemptsSinceStable += 1
        state = .connecting(attempt: attemptsSinceStable)
        return .connect(attempt: attemptsSinceStable)
    }

    private mutating func decide(after error: WebSocketError, uptime: Duration?, random: Double) -> Action {
        switch policy.decision(for: error, uptime: uptime) {
        case .complete:
            return finish(.completed)
        case .fail:
            return finish(.failed(error))
        case .retry(let retryAfter):
            if let maxAttempts = policy.maxAttempts, failedAttempts >= maxAttempts {
                return finish(.failed(error))
            }
            let delay = policy.delay(afterAttempt: failedAttempts, retryAfter: retryAfter, random: random)
            state = .reconnecting(after: delay, cause: error)
            return .wait(delay, cause: error)
        }
    }
}
