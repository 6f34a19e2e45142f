/// When an application heartbeat (``WebSocketHeartbeat``) is due and when its missing reply
/// ends the connection: pure timer logic, as ``Keepalive`` is for pings.
struct Heartbeat {
    enum Action: Equatable {
        case none
        case send
        case timedOut
    }

    let interval: Duration
    let timeout: Duration
    private var nextSendAt: ContinuousClock.Instant?
    /// A heartbeat went out and its reply is due by then.
    private(set) var replyDeadline: ContinuousClock.Instant?
    private var isPaused = false

    init(interval: Duration, timeout: Duration, now: ContinuousClock.Instant) {
        self.interval = interval
        self.timeout = timeout
        nextSendAt = now + interval
    }

    /// The next time ``tick(at:)`` has something to decide, if any.
    var nextDeadline: ContinuousClock.Instant? {
        isPaused ? nil : replyDeadline ?? nextSendAt
    }

    /// What to do at `now`.
    mutating func tick(at now: ContinuousClock.Instant) -> Action {
        guard !isPaused else { return .none }
        if let replyDeadline {
            return now >= replyDeadline ? .timedOut : .none
        }
        guard let nextSendAt, now >= nextSendAt else { return .none }
        self.nextSendAt = nil
        replyDeadline = now + timeout
        return .send
    }

    /// A reply arrived: the next heartbeat is an interval away.
    mutating func replyReceived(at now: ContinuousClock.Instant) {
        replyDeadline = nil
        nextSendAt = now + interval
    }

    /// Reading paused: replies cannot arrive, so no deadline runs.
    mutating func pause() { isPaused = true }

    /// Reading resumed: a reply still due gets a fresh deadline.
    mutating func resume(at now: ContinuousClock.Instant) {
        guard isPaused else { return }
        isPaused = false
        if replyDeadline != nil { replyDeadline = now + timeout }
    }
}
