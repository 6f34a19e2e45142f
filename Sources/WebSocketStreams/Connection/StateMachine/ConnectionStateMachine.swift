import DequeModule
import WebSocketCore

/// Every decision about one client connection, as a value: no socket, no lock, no clock.
///
/// The loop's transport (``ClientTransport``) and the user's tasks (``ClientConnection``)
/// feed it events under one lock: a handshake that completed, messages and control frames
/// read, the user's send, ping and close, a timer that fired (with `now`), the socket
/// closing. Each method updates the state and returns what must be done (continuations to
/// resume, a frame to write, reading to pause, a deadline to arm, the socket to drop),
/// which the caller carries out after releasing the lock.
///
/// The connection's life is ``State``: `connecting` → `open` → `closing` → `closed`, where
/// each case carries what only that stage has (the connect waiter, the close handshake's
/// progress, how the connection ended), so a close frame cannot be received before the
/// connection opened, nor an ending exist before it closed. `connecting` may go straight
/// to `closed` (the handshake failed) and `open` may too (the connection was lost).
///
/// The mailboxes live beside the state, since every stage has them: received messages
/// waiting for the consumer (``InboundQueue``), messages accepted by `send` and not yet
/// taken for writing (``OutboundQueue``), pings waiting for their pong, and keep-alive.
///
/// The methods are grouped by concern in the files beside this one: the stages' data
/// (`+Stages`), opening, sending, receiving, closing, timers, and the consumer's lifetime.
struct ConnectionStateMachine {
    /// Where the connection is in its life, with what only that stage has.
    enum State {
        /// The opening handshake is under way (TCP, proxy, TLS, the HTTP upgrade).
        case connecting(Connecting)
        /// The WebSocket protocol runs; nobody has started to close.
        case open
        /// A close frame was asked for, sent or received, or this side is failing the
        /// connection; messages may still arrive until the peer answers.
        case closing(Closing)
        /// The socket is gone; how the connection ended.
        case closed(WebSocketEnding)
    }

    /// How long each stage may take: from the configuration, and fixed by RFC 6455 practice.
    struct Timing {
        /// How long a close may take (queued messages, the close handshake) before the socket is dropped.
        var closeTimeout: Duration = .seconds(10)
        /// How long the client waits for the server to end TCP after the close handshake
        /// (RFC 6455 7.1.1: the server ends it first), or after failing the connection.
        var lingerAfterClose: Duration = .seconds(1)
        /// How long a failure waits for the consumer to finish the messages before it.
        var deferredFailureGrace: Duration = .seconds(2)
        /// How long a cancelled attempt waits for the server's answer to an upgrade request
        /// already sent, so an upgrade that completes meanwhile can be closed properly.
        var abandonGrace: Duration = .seconds(1)
        /// Keep-alive: how often to ping an idle connection, and how long to wait for the pong.
        var pingInterval: Duration?
        var pongTimeout: Duration
        /// Whether keep-alive waits for silence or pings on a schedule.
        var pingMode: WebSocketPingMode = .idle
        /// The grid keep-alive pings fall on, shared by every connection (``Keepalive/sharedGrid(for:)``);
        /// `nil` for exact times.
        var pingGrid: Duration?
        /// The application heartbeat's interval and reply timeout, when there is one.
        var heartbeat: (interval: Duration, timeout: Duration)?
        /// The largest message the peer may send (for the error a 1009 reports).
        var maxMessageSize: Int
    }

    typealias ConnectWaiter = CheckedContinuation<Void, any Error>
    typealias PingWaiter = CheckedContinuation<Duration, any Error>
    typealias CloseWaiter = UnsafeContinuation<Void, Never>

    /// Where the connection is; only the machine's own methods (in the files beside this one) change it.
    var state: State {
        didSet { stage = Stage(state) }
    }
    /// Which case ``state`` is, without its data: what the per-message paths ask, since
    /// testing a case of a payload-free enum copies nothing. It follows ``state``.
    private(set) var stage: Stage = .connecting

    /// The cases of ``State``, without their data.
    enum Stage: Equatable {
        case connecting, open, closing, closed

        init(_ state: State) {
            switch state {
            case .connecting: self = .connecting
            case .open: self = .open
            case .closing: self = .closing
            case .closed: self = .closed
            }
        }
    }
    var timing: Timing
    /// Received messages waiting for the consumer.
    var inbound: InboundQueue
    /// Messages accepted by `send` and not yet taken for writing, and senders waiting for room.
    var outbound: OutboundQueue
    /// `ping()` calls waiting to be written or for their pong.
    var pings = PendingPings()
    /// Keep-alive pings and every ping's pong deadline (from the moment the connection opens).
    var keepalive: Keepalive?
    /// The application heartbeat's schedule and reply deadline, when one is configured.
    var heartbeat: Heartbeat?
    /// Who holds the connection's `messages` streams and handle.
    var consumer = ConsumerLifetime()
    /// `close()` and `waitUntilClosed()` calls waiting for the end.
    var closeWaiters: [CloseWaiter] = []
    /// Work the loop must do on its next pass, and whether it has been asked to come.
    var schedule = Schedule()
    /// What the opening handshake settled (subprotocol, extensions, response headers).
    var negotiated = Negotiated()
    /// A broken rule held until the consumer has finished the messages before it, and the
    /// latest time to apply it anyway (see ``protocolFailure(_:now:)``).
    var deferredFailure: (failure: ProtocolFailure, deadline: ContinuousClock.Instant)?

    init(configuration: WebSocketConfiguration, handshakeDeadline: ContinuousClock.Instant = .now + .seconds(3600)) {
        inbound = InboundQueue(
            maxMessages: configuration.maxBufferedMessages, maxBytes: configuration.maxBufferedBytes)
        outbound = OutboundQueue(highWatermark: configuration.maxBufferedSendBytes)
        timing = Timing(
            pingInterval: configuration.pingInterval, pongTimeout: configuration.pongTimeout,
            pingMode: configuration.pingMode, pingGrid: Keepalive.sharedGrid(for: configuration.pingInterval), heartbeat: configuration.heartbeat.map { ($0.interval, $0.timeout) },
            maxMessageSize: configuration.maxMessageSize)
        state = .connecting(Connecting(deadline: handshakeDeadline))
    }

    /// What the opening handshake settled.
    struct Negotiated {
        var subprotocol: String?
        var extensions: String?
        var responseHeaders: [String: String] = [:]
        /// How long each opening step took (with whether TLS resumed a session).
        var timings = WebSocketConnectTimings()
    }

    var subprotocol: String? { negotiated.subprotocol }
    var negotiatedExtensions: String? { negotiated.extensions }
    var responseHeaders: [String: String] { negotiated.responseHeaders }
    var tlsSessionResumed: Bool { negotiated.timings.isTLSSessionResumed }
    var connectTimings: WebSocketConnectTimings { negotiated.timings }

    /// Whether the protocol runs and nobody has started to close.
    var isOpen: Bool { stage == .open }

    /// Whether the connection has ended.
    var isClosed: Bool { stage == .closed }

    /// How the connection ended, once it has.
    var ending: WebSocketEnding? {
        if case .closed(let ending) = state { return ending }
        return nil
    }

    /// Messages accepted and never written whole (or never acknowledged), once the connection ended.
    var unsentMessages: [WebSocketMessage] { ending?.unsentMessages ?? [] }

    /// The error for operations that need an open connection.
    var closedError: WebSocketError {
        switch state {
        case .closed(let ending):
            return ending.error ?? .closed(code: ending.closeCode, reason: ending.closeReason)
        case .closing(let closing):
            if let failure = closing.failure { return failure }
            if let peer = closing.peer { return .closed(code: peer.code, reason: peer.reason) }
            if let local = closing.local { return .closed(code: local.code, reason: local.reason) }
        case .connecting(let connecting):
            if let requested = connecting.closeRequested { return .closed(code: requested.code, reason: requested.reason) }
        case .open:
            break
        }
        return .closed(code: .abnormalClosure, reason: "")
    }

    // MARK: - Scheduling

    /// Work the loop must do on its next pass over the connection.
    struct ServiceRequests: OptionSet, Sendable {
        let rawValue: UInt8
        /// Something is queued to write (messages, pings or the close frame).
        static let write = ServiceRequests(rawValue: 1 << 0)
        /// The consumer caught up: read from the socket again.
        static let resumeReading = ServiceRequests(rawValue: 1 << 1)
        /// Drop the connection now (connect cancelled or timed out by the caller).
        static let abort = ServiceRequests(rawValue: 1 << 2)
        /// The consumer is done with the messages that arrived before a broken rule: fail
        /// the connection now (see ``protocolFailure(_:now:)``).
        static let applyDeferredFailure = ServiceRequests(rawValue: 1 << 3)
        /// A deadline moved (a close asked for got its own): arm the timer again. Set by
        /// ``takeRequests(now:)``, never asked for.
        static let deadlineMoved = ServiceRequests(rawValue: 1 << 4)
    }

    /// The loop's pending work, and whether it has been posted already.
    struct Schedule {
        var requests: ServiceRequests = []
        var isScheduled = false
    }

    /// Adds service requests; returns `true` when the caller must post the connection to
    /// the loop (it was not already scheduled).
    mutating func request(_ newRequests: ServiceRequests) -> Bool {
        schedule.requests.formUnion(newRequests)
        if schedule.isScheduled { return false }
        schedule.isScheduled = true
        return true
    }

    /// The loop picks up the pending requests. A close asked for since the last pass gets
    /// its deadline now, so a peer that never reads cannot hold the connection open.
    mutating func takeRequests(now: @autoclosure () -> ContinuousClock.Instant) -> ServiceRequests {
        schedule.isScheduled = false
        defer { schedule.requests = [] }
        if stage == .closing, case .closing(var closing) = state, closing.deadline == nil, closing.local != nil {
            closing.deadline = now() + timing.closeTimeout
            state = .closing(closing)
            return schedule.requests.union(.deadlineMoved)
        }
        return schedule.requests
    }
}
