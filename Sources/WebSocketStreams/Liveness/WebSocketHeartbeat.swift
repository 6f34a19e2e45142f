/// An application-level heartbeat: a message of the server's protocol sent on a schedule,
/// and how to recognise its reply (``WebSocketConfiguration/heartbeat``).
///
/// Exchange and chat APIs often ask for one (`{"op":"ping"}` answered by `{"op":"pong"}`)
/// and close connections that do not send it; a missing reply means the peer is gone even
/// when WebSocket pings would still be answered by a proxy.
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.heartbeat = WebSocketHeartbeat(
///     message: .text(#"{"op":"ping"}"#), interval: .seconds(15), timeout: .seconds(10)
/// ) { reply in
///     if case .text(let text) = reply { return text.contains(#""op":"pong""#) }
///     return false
/// }
/// ```
///
/// The connection sends ``message`` every ``interval`` (counted from the last reply) and
/// expects a message for which ``isReply`` is true within ``timeout``; without one it ends
/// with ``WebSocketError/pongTimeout`` (so a ``ReconnectingWebSocket`` reconnects). Replies
/// are kept out of ``WebSocket/messages`` unless ``deliversReplies``. While reading is
/// paused for a slow consumer no deadline runs, as for pings.
public struct WebSocketHeartbeat: Sendable {
    /// The message sent as the heartbeat.
    public var message: WebSocketMessage
    /// How long after the last reply (or the open) the next heartbeat goes out.
    public var interval: Duration
    /// How long a heartbeat may go without a reply before the connection is dropped.
    public var timeout: Duration
    /// Whether a received message is the heartbeat's reply. Called on the event loop's
    /// thread for every message received: it must be quick and never block.
    public var isReply: @Sendable (WebSocketMessage) -> Bool
    /// Whether replies are also delivered to ``WebSocket/messages``; `false` by default.
    public var deliversReplies = false

    /// A heartbeat of `message` every `interval`, whose reply `isReply` recognises within `timeout`.
    public init(
        message: WebSocketMessage, interval: Duration, timeout: Duration,
        isReply: @escaping @Sendable (_ message: WebSocketMessage) -> Bool
    ) {
        self.message = message
        self.interval = interval
        self.timeout = timeout
        self.isReply = isReply
    }
}
