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

    init(policy: ReconnectPolicy) {
        self.policy = policy
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
        failedAttempts += 1
        return decide(after: error, uptime: nil, random: random)
    }

    /// The attempt succeeded.
    mutating func connected(subprotocol: String?, at now: ContinuousClock.Instant) {
        guard requestedEnd == nil else { return }
        connectedAt = now
        state = .connected(subprotocol: subprotocol)
    }

    /// The open connection ended; `error` says how (``WebSocketError/closed(code:reason:)``
    /// for a close handshake or TCP loss, or the error that ended it).
    mutating func connectionEnded(_ error: WebSocketError, at now: ContinuousClock.Instant, random: Double) -> Action {
        let uptime = connectedAt.map { now - $0 }
        connectedAt = nil
        if let requestedEnd { return finish(requestedEnd) }
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
