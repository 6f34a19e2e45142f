/// When to send keep-alive pings and when a missing pong ends the connection, as pure
/// timer logic: the transport tells it what happened and at what time, asks what to do
/// at a deadline, and arms one timer for ``nextDeadline``.
///
/// One ping is in flight at a time, a keep-alive or a user's `ping()`: a peer may answer
/// only the latest of several pings (RFC 6455 5.5.3), which would leave the others
/// unanswered. Ping payloads are a tag byte and an 8-byte id (or the bytes a user chose),
/// so a pong is matched to its ping by its payload and unsolicited pongs (allowed as
/// heartbeats) are ignored.
struct Keepalive {
    enum Tag: UInt8, Sendable {
        case user = 0x55
        case keepalive = 0x4B
    }

    struct InFlight: Equatable {
        var tag: Tag
        var id: UInt64
        /// The ping's payload: its pong must carry the same bytes.
        var payload: [UInt8]
        var sentAt: ContinuousClock.Instant
        var deadline: ContinuousClock.Instant
    }

    enum Action: Equatable {
        case none
        case sendPing
        case timedOut
    }

    let interval: Duration?
    let pongTimeout: Duration
    private(set) var inFlight: InFlight?
    private var nextPingAt: ContinuousClock.Instant?
    /// Reading is paused (a slow consumer): pongs cannot arrive, so nothing is due.
    private(set) var isPaused = false
    /// When data last arrived while a ping was in flight: a peer that sends is alive,
    /// even if its pong waits behind data this side has not read yet.
    private var dataWhileWaiting: ContinuousClock.Instant?
    private var keepaliveCount: UInt64 = 0

    init(interval: Duration?, pongTimeout: Duration, now: ContinuousClock.Instant) {
        self.interval = interval
        self.pongTimeout = pongTimeout
        nextPingAt = interval.map { now + $0 }
    }

    /// The next time ``tick(at:unreadInputWaiting:)`` has something to decide, if any.
    var nextDeadline: ContinuousClock.Instant? {
        if isPaused { return nil }
        if let inFlight { return inFlight.deadline }
        return nextPingAt
    }

    /// Whether a ping may be written now (none is in flight).
    var mayPing: Bool { inFlight == nil }

    /// The payload of the next keep-alive ping (its id counts up).
    mutating func nextKeepalivePayload() -> (Tag, UInt64) {
        keepaliveCount += 1
        return (.keepalive, keepaliveCount)
    }

    /// A ping went out, with `payload` (by default the tag and id, ``payload(tag:id:)``).
    mutating func pingSent(tag: Tag, id: UInt64, payload: [UInt8]? = nil, at now: ContinuousClock.Instant) {
        inFlight = InFlight(
            tag: tag, id: id, payload: payload ?? Self.payload(tag: tag, id: id), sentAt: now, deadline: now + pongTimeout)
        dataWhileWaiting = nil
        nextPingAt = nil
    }

    /// A pong arrived: the ping it answers and its round trip, or `nil` if it answers none.
    mutating func pongReceived(_ payload: [UInt8], at now: ContinuousClock.Instant) -> (InFlight, Duration)? {
        guard let inFlight, payload == inFlight.payload else { return nil }
        self.inFlight = nil
        dataWhileWaiting = nil
        nextPingAt = interval.map { now + $0 }
        return (inFlight, now - inFlight.sentAt)
    }

    /// Peer data arrived.
    mutating func dataReceived(at now: ContinuousClock.Instant) {
        if inFlight != nil { dataWhileWaiting = now }
    }

    /// Reading paused: no deadline applies until it resumes.
    mutating func pause() { isPaused = true }

    /// Reading resumed: a ping in flight gets a fresh pong deadline; otherwise the next
    /// keep-alive is a full interval away.
    mutating func resume(at now: ContinuousClock.Instant) {
        guard isPaused else { return }
        isPaused = false
        if inFlight != nil {
            let deadline = now + pongTimeout
            inFlight?.deadline = deadline
        } else {
            nextPingAt = interval.map { now + $0 }
        }
    }

    /// What to do at `now`. `unreadInputWaiting`: the socket holds bytes not read yet (the
    /// thread was descheduled past the deadline; they may hold the pong).
    mutating func tick(at now: ContinuousClock.Instant, unreadInputWaiting: Bool = false) -> Action {
        guard !isPaused else { return .none }
        if let current = inFlight {
            guard now >= current.deadline else { return .none }
            if let data = dataWhileWaiting, data + pongTimeout > now {
                let deadline = data + pongTimeout
                inFlight?.deadline = deadline
                return .none
            }
            if unreadInputWaiting {
                let deadline = now + pongTimeout
                inFlight?.deadline = deadline
                dataWhileWaiting = now
                return .none
            }
            return .timedOut
        }
        guard let nextPingAt, now >= nextPingAt else { return .none }
        self.nextPingAt = nil
        return .sendPing
    }

    /// A ping payload: the tag byte, then the id big-endian.
    static func payload(tag: Tag, id: UInt64) -> [UInt8] {
        [tag.rawValue] + (0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * $0)) }
    }
}
