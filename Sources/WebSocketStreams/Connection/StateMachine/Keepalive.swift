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
    /// `.idle`: the next ping waits for an interval of silence; `.periodic`: one per interval.
    let mode: WebSocketPingMode
    private(set) var inFlight: InFlight?
    /// When something last arrived (`.idle` mode): the due ping is put off to an interval
    /// after it, when the timer fires, so arriving data never re-arms the timer.
    private var lastReceivedAt: ContinuousClock.Instant?
    private var nextPingAt: ContinuousClock.Instant?
    /// Reading is paused (a slow consumer): pongs cannot arrive, so nothing is due.
    private(set) var isPaused = false
    /// When data last arrived while a ping was in flight: a peer that sends is alive,
    /// even if its pong waits behind data this side has not read yet.
    private var dataWhileWaiting: ContinuousClock.Instant?
    private var keepaliveCount: UInt64 = 0

    /// The grid ping times are moved onto (``aligned(_:)``); `nil`: exact times.
    let grid: Duration?

    init(
        interval: Duration?, pongTimeout: Duration, mode: WebSocketPingMode = .idle, grid: Duration? = nil,
        now: ContinuousClock.Instant
    ) {
        self.interval = interval
        self.pongTimeout = pongTimeout
        self.mode = mode
        self.grid = grid
        nextPingAt = interval.map { now + $0 }
        nextPingAt = nextPingAt.map(aligned)
    }

    /// Where every connection's ping times are counted from, so they fall on one grid.
    private static let gridOrigin = ContinuousClock.now

    /// The grid a connection pinging every `interval` shares with every other: a tenth of
    /// the interval, at most a second. Pings due at nearly the same time then go out in the
    /// same pass of the event loop, whose every pass costs in proportion to the number of
    /// connections (libwebsockets 4.1 polls every socket): with 15,000 connections pinging
    /// every 20 s, about 20 passes a second instead of 750.
    static func sharedGrid(for interval: Duration?) -> Duration? {
        interval.map { min($0 / 10, .seconds(1)) }
    }

    /// `instant` moved later to the next tick of ``grid`` (counted from one origin for the
    /// whole process); unchanged without a grid.
    func aligned(_ instant: ContinuousClock.Instant) -> ContinuousClock.Instant {
        guard let grid, grid > .zero else { return instant }
        let ticks = ((instant - Self.gridOrigin) / grid).rounded(.up)
        return Self.gridOrigin + grid * ticks
    }

    /// Whether arriving data matters now: a ping is in flight (data proves the peer alive),
    /// or `.idle` mode counts silence.
    var wantsReceiveTimes: Bool { inFlight != nil || (mode == .idle && interval != nil) }

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
    /// The next ping is an interval after the pong (`.idle`), or after the ping (`.periodic`).
    mutating func pongReceived(_ payload: [UInt8], at now: ContinuousClock.Instant) -> (InFlight, Duration)? {
        guard let inFlight, payload == inFlight.payload else { return nil }
        self.inFlight = nil
        dataWhileWaiting = nil
        nextPingAt = interval.map { aligned(mode == .periodic ? max(now, inFlight.sentAt + $0) : now + $0) }
        return (inFlight, now - inFlight.sentAt)
    }

    /// Peer data arrived.
    mutating func dataReceived(at now: ContinuousClock.Instant) {
        if inFlight != nil { dataWhileWaiting = now }
        if mode == .idle { lastReceivedAt = now }
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
            nextPingAt = interval.map { aligned(now + $0) }
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
        if mode == .idle, let interval, let lastReceivedAt, lastReceivedAt + interval > now {
            // Not idle: something arrived since; the ping waits for an interval of silence.
            self.nextPingAt = aligned(lastReceivedAt + interval)
            return .none
        }
        self.nextPingAt = nil
        return .sendPing
    }

    /// A ping payload: the tag byte, then the id big-endian.
    static func payload(tag: Tag, id: UInt64) -> [UInt8] {
        [tag.rawValue] + (0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * $0)) }
    }
}
