import CoreMetrics

/// The swift-metrics handles of one connection, made once when `connect` is called, and
/// the recording done at each point of its life (names and meanings: <doc:Metrics>).
///
/// Only made when a backend is there (``MetricsScope``); a connection without one holds
/// `nil` and skips every call. The hot paths record per batch, never per message: what
/// one read delivered (``received(_:)``), what one flush wrote (``sent(_:)``), and the
/// send queue's size once per service pass (``sendQueueChanged(by:)``). Handles whose
/// dimensions are only known at the event (failure kind, close code) are made then,
/// once per connection.
final class ConnectionMetrics: Sendable {
    private let scope: MetricsScope
    /// When `connect` was called: the handshake duration runs from here.
    private let connectStarted: ContinuousClock.Instant
    private let opened: Counter
    private let open: Meter
    private let handshakeDuration: CoreMetrics.Timer
    private let textMessagesReceived: Counter
    private let binaryMessagesReceived: Counter
    private let bytesReceived: Counter
    private let textMessagesSent: Counter
    private let binaryMessagesSent: Counter
    private let bytesSent: Counter
    private let sendQueueBytes: Meter
    private let pingRoundTrip: CoreMetrics.Timer

    /// The handles for a connection configured with `settings`; `nil` when there is no backend.
    init?(_ settings: WebSocketConfiguration.Metrics, connectStarted: ContinuousClock.Instant = .now) {
        guard let scope = MetricsScope(settings) else { return nil }
        self.scope = scope
        self.connectStarted = connectStarted
        opened = scope.counter(Names.connectionsOpened)
        open = scope.meter(Names.connectionsOpen)
        handshakeDuration = scope.timer(Names.handshakeDuration)
        textMessagesReceived = scope.counter(Names.messagesReceived, [("type", "text")])
        binaryMessagesReceived = scope.counter(Names.messagesReceived, [("type", "binary")])
        bytesReceived = scope.counter(Names.bytesReceived)
        textMessagesSent = scope.counter(Names.messagesSent, [("type", "text")])
        binaryMessagesSent = scope.counter(Names.messagesSent, [("type", "binary")])
        bytesSent = scope.counter(Names.bytesSent)
        sendQueueBytes = scope.meter(Names.sendQueueBytes)
        pingRoundTrip = scope.timer(Names.pingRoundTrip)
    }

    /// The metric names, without the label prefix.
    enum Names {
        static let connectionsOpened = "connections_opened_total"
        static let connectionFailures = "connection_failures_total"
        static let connectionsClosed = "connections_closed_total"
        static let connectionsOpen = "connections_open"
        static let reconnects = "reconnects_total"
        static let messagesResent = "messages_resent_total"
        static let messagesReceived = "messages_received_total"
        static let messagesSent = "messages_sent_total"
        static let bytesReceived = "bytes_received_total"
        static let bytesSent = "bytes_sent_total"
        static let sendQueueBytes = "send_queue_bytes"
        static let handshakeDuration = "handshake_duration"
        static let connectPhaseDuration = "connect_phase_duration"
        static let pingRoundTrip = "ping_rtt"
    }

    // MARK: - Connecting and ending

    /// The opening handshake succeeded (loop thread), its phases having taken `timings`.
    func opened(at now: ContinuousClock.Instant, timings: WebSocketConnectTimings) {
        opened.increment()
        open.increment()
        handshakeDuration.record(now - connectStarted)
        let phases: [(String, Duration?)] = [
            ("dns", timings.nameResolution), ("tcp", timings.tcpConnect), ("proxy", timings.proxyTunnel),
            ("tls", timings.tlsHandshake), ("upgrade", timings.upgrade),
        ]
        for case (let phase, let duration?) in phases {
            scope.timer(Names.connectPhaseDuration, [("phase", phase)]).record(duration)
        }
    }

    /// `connect` threw `error`.
    func connectFailed(_ error: any Error) {
        scope.counter(Names.connectionFailures, [("kind", Self.failureKind(error))]).increment()
    }

    /// The failure's kind: the ``WebSocketError/Code`` name, `cancelled`, or `other`.
    static func failureKind(_ error: any Error) -> String {
        if let error = error as? WebSocketError { return error.code.description }
        return error is CancellationError ? "cancelled" : "other"
    }

    /// A connection that had opened ended with `code`, started by `initiator` (loop thread).
    func closed(code: WebSocketCloseCode, initiator: WebSocketEnding.Initiator) {
        let initiatorName = switch initiator {
        case .local: "local"
        case .peer: "peer"
        case .connectionLost: "connection_lost"
        }
        scope.counter(Names.connectionsClosed, [("code", String(code.rawValue)), ("initiator", initiatorName)]).increment()
        open.decrement()
    }

    // MARK: - Hot paths, per batch

    /// One read's messages, before they go to the consumer's buffer (loop thread).
    func received(_ messages: [WebSocketMessage]) {
        var text = 0
        var bytes = 0
        for message in messages {
            bytes += message.byteCount
            if case .text = message { text += 1 }
        }
        let binary = messages.count - text
        if text > 0 { textMessagesReceived.increment(by: text) }
        if binary > 0 { binaryMessagesReceived.increment(by: binary) }
        if bytes > 0 { bytesReceived.increment(by: bytes) }
    }

    /// What one flush wrote whole (loop thread).
    func sent(_ tally: FrameWriter.WrittenTally) {
        if tally.textMessages > 0 { textMessagesSent.increment(by: tally.textMessages) }
        if tally.binaryMessages > 0 { binaryMessagesSent.increment(by: tally.binaryMessages) }
        if tally.bytes > 0 { bytesSent.increment(by: tally.bytes) }
    }

    /// The send queue grew (or, negative, shrank) by `bytes` since the last report.
    func sendQueueChanged(by bytes: Int) {
        if bytes > 0 {
            sendQueueBytes.increment(by: Double(bytes))
        } else if bytes < 0 {
            sendQueueBytes.decrement(by: Double(-bytes))
        }
    }

    /// A pong answered a ping (a keep-alive's or `ping()`'s) after `roundTrip` (loop thread).
    func pongReceived(roundTrip: Duration) {
        pingRoundTrip.record(roundTrip)
    }
}
