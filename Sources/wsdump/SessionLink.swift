import TaskLifetimes
import WebSocketStreams

/// What a session talks through: one ``WebSocket`` (``DirectLink``) or a
/// ``ReconnectingWebSocket`` (``ReconnectingLink``, `--reconnect`).
protocol SessionLink: Sendable {
    /// Starts the task that reads messages, owned by `tasks`: `deliver` for each (it may wait
    /// for the output to catch up), then `ended` once no more will come.
    func startReceiving(
        in tasks: TaskBag, deliver: @escaping @Sendable (WebSocketMessage) async -> Void, ended: @escaping @Sendable () -> Void)
    /// Starts the task that reads messages piece by piece as they arrive (`--stream`), owned
    /// by `tasks`: `deliver` for each piece, then `ended` once no more will come.
    func startReceivingPieces(
        in tasks: TaskBag, deliver: @escaping @Sendable (ReceivedPiece) async -> Void, ended: @escaping @Sendable () -> Void)
    /// Sends a message, in order with the others.
    func send(_ message: WebSocketMessage) async throws
    /// Sends one binary message made of `pieces` (`--send-file`).
    func send(streaming pieces: FilePieces) async throws
    /// Pings (with `payload` when given) and returns the round-trip time.
    func ping(payload: [UInt8]?) async throws -> Duration
    /// Closes with `code` and waits for the end.
    func close(code: WebSocketCloseCode, reason: String) async
    /// Payload bytes of whole messages written so far (``WebSocket/writtenMessageBytes``,
    /// for the upload progress bar); 0 when unknown.
    var writtenMessageBytes: Int { get }
    /// Whether messages can still be sent.
    var isOpen: Bool { get }
    /// Whether a connection is open now (for `--reconnect`, not between connections).
    var isConnected: Bool { get }
    /// Messages whose `send` returned but that no connection wrote before the end.
    var unsentMessages: [WebSocketMessage] { get }
}
