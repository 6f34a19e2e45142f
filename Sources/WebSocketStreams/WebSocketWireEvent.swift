/// Something a connection sent or received besides data messages: the opening handshake's
/// request and response, and control frames (ping, pong, close).
///
/// Set ``WebSocketConfiguration/wireEventObserver`` to see them, e.g. to build an inspector
/// or a protocol trace:
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.wireEventObserver = { event in
///     if event.kind == .pongReceived, let roundTrip = event.roundTrip {
///         latency.record(roundTrip)
///     }
///     trace.yield(event.description)   // e.g. "> ping (keep-alive)"
/// }
/// ```
///
/// Each event carries its ``kind`` and the details that kind has; the others are `nil`.
/// New kinds may be added in later versions: when you switch over ``kind``, keep a
/// `default` branch.
public struct WebSocketWireEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public let kind: Kind

    /// For ``Kind/pingSent``: `true` when the connection sent the ping to keep itself alive
    /// (``WebSocketConfiguration/pingInterval``), `false` for ``WebSocket/ping()``.
    /// `false` for other kinds.
    public let isKeepalive: Bool

    /// For ``Kind/pongReceived``: the time from the ping to its pong.
    public let roundTrip: Duration?

    /// For ``Kind/closeSent`` and ``Kind/closeReceived``: the close frame's status code
    /// (``WebSocketCloseCode/noStatusReceived`` when the frame carried none).
    public let closeCode: WebSocketCloseCode?

    /// For ``Kind/closeSent`` and ``Kind/closeReceived``: the close frame's reason, possibly empty.
    public let closeReason: String?

    /// For ``Kind/handshakeRequestSent`` and ``Kind/handshakeResponseReceived``: the HTTP
    /// head, as lines ending in `\r\n` followed by the empty line that ends a head.
    ///
    /// The request is the text written to the socket. The response is the status line and
    /// the header fields as parsed, in the server's order and spelling (whitespace around
    /// values trimmed). Unless ``WebSocketConfiguration/redactsSecretsInLogs`` is off,
    /// credentials are replaced by `<redacted>`: the values of credential headers given in
    /// ``WebSocketConfiguration/headers`` (and the URL's user info), the URL's query values,
    /// and the server's `Set-Cookie` values. `Sec-WebSocket-Key` and `Sec-WebSocket-Accept`
    /// are shown: they are nonces, not credentials.
    public let httpHead: String?

    private init(
        kind: Kind, isKeepalive: Bool = false, roundTrip: Duration? = nil, closeCode: WebSocketCloseCode? = nil,
        closeReason: String? = nil, httpHead: String? = nil
    ) {
        self.kind = kind
        self.isKeepalive = isKeepalive
        self.roundTrip = roundTrip
        self.closeCode = closeCode
        self.closeReason = closeReason
        self.httpHead = httpHead
    }

    /// A ping went out; `keepalive` tells a keep-alive ping from one of ``WebSocket/ping()``.
    public static func pingSent(keepalive: Bool) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .pingSent, isKeepalive: keepalive)
    }

    /// The pong answering this side's ping arrived `roundTrip` after the ping went out.
    public static func pongReceived(roundTrip: Duration) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .pongReceived, roundTrip: roundTrip)
    }

    /// This side's close frame went out.
    public static func closeSent(code: WebSocketCloseCode, reason: String) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .closeSent, closeCode: code, closeReason: reason)
    }

    /// The peer's close frame arrived.
    public static func closeReceived(code: WebSocketCloseCode, reason: String) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .closeReceived, closeCode: code, closeReason: reason)
    }

    /// The opening handshake's request went out; `head` is its text (see ``httpHead``).
    public static func handshakeRequestSent(head: String) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .handshakeRequestSent, httpHead: head)
    }

    /// The head of the server's answer to the opening handshake arrived (`101` or a
    /// refusal); `head` is its text (see ``httpHead``).
    public static func handshakeResponseReceived(head: String) -> WebSocketWireEvent {
        WebSocketWireEvent(kind: .handshakeResponseReceived, httpHead: head)
    }

    /// One line in the style of a protocol trace: `>` for what this side sent, `<` for
    /// what it received, e.g. `> ping (keep-alive)`, `< pong (0.42 ms)`,
    /// `< close: 1001 (going away) "restarting"`, `> GET /chat HTTP/1.1` (a handshake
    /// shows its first line).
    public var description: String {
        let arrow = kind.isSent ? ">" : "<"
        var text = "\(arrow) \(kind.frameName)"
        if isKeepalive { text += " (keep-alive)" }
        if let roundTrip {
            let milliseconds = Double(roundTrip.components.seconds) * 1000
                + Double(roundTrip.components.attoseconds) / 1e15
            text += " (\((milliseconds * 100).rounded() / 100) ms)"
        }
        if let closeCode {
            text += ": \(closeCode)"
            if let closeReason, !closeReason.isEmpty { text += " \(closeReason.debugDescription)" }
        }
        if let httpHead {
            text = "\(arrow) " + (httpHead.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? "")
        }
        return text
    }
}
