/// What a single connection (``WebSocket``) and a socket that reconnects
/// (``ReconnectingWebSocket``) have in common, so code and tests are written once.
///
/// ```swift
/// func subscribe(_ socket: some WebSocketProtocol, to topic: String) async throws -> WebSocketMessage? {
///     try await socket.send(.text(#"{"subscribe":"\#(topic)"}"#))
///     var messages = socket.messages.makeAsyncIterator()
///     return await messages.next()
/// }
///
/// let direct = try await WebSocket.connect(to: "wss://example.org/feed")
/// _ = try await subscribe(direct, to: "prices")
/// let resilient = ReconnectingWebSocket(to: "wss://example.org/feed")
/// _ = try await subscribe(resilient, to: "prices")
/// ```
public protocol WebSocketProtocol: AnyObject, Sendable {
    /// The messages the peer sends, in order. Ending its iteration ends the socket (1001).
    var messages: AsyncStream<WebSocketMessage> { get }

    /// Sends a message; returns once it is queued (see each type for when it waits).
    func send(_ message: WebSocketMessage) async throws

    /// Sends a message, uncompressed when `compress` is `false` (see ``WebSocket/send(_:compress:)``).
    func send(_ message: WebSocketMessage, compress: Bool) async throws

    /// Pings the peer and returns the round trip to its pong.
    func ping() async throws -> Duration

    /// Closes with `code` and `reason` and returns once the socket has ended.
    func close(code: WebSocketCloseCode, reason: String) async

    /// The subprotocol the server chose for the current connection, if any.
    var subprotocol: String? { get }

    /// Messages accepted for sending that the peer never acknowledged (never written, or
    /// written but not acknowledged by the peer's TCP when the connection ended).
    var unsentMessages: [WebSocketMessage] { get }
}

extension WebSocketProtocol {
    /// Closes with 1000 (normal closure) and no reason.
    public func close() async {
        await close(code: .normalClosure, reason: "")
    }
}

extension WebSocket: WebSocketProtocol {}

extension ReconnectingWebSocket: WebSocketProtocol {}
