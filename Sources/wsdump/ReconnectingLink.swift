import SynchronizationSupport
import TaskLifetimes
import WebSocketStreams

/// A session over a ``ReconnectingWebSocket`` (`--reconnect`).
///
/// 1001 ends the iteration of the socket's messages (the socket ends `cancelled`); other
/// codes go through ``ReconnectingWebSocket/close(code:reason:)`` (it ends `completed`).
final class ReconnectingLink: SessionLink {
    /// The connection open now, set by the socket's `onConnect`.
    private final class CurrentConnection: Sendable {
        let connection = AnnotatedMutex<WebSocket?>(nil)
    }

    let socket: ReconnectingWebSocket
    private let current: CurrentConnection
    /// Owns the task reading the socket's messages, so a close with 1001 can cancel it.
    private let receiving = TaskBag()
    /// Whether that task was started.
    private let receiveStarted = AnnotatedMutex(false)
    /// Complete once the task reading the messages has returned.
    private let receiveFinished = Completion()

    /// Creates the socket (it connects once messages are read).
    ///
    /// - Parameters:
    ///   - headerCommand: Runs before every attempt (`--header-command`); the headers it
    ///     gives are that attempt's. If it throws, the socket ends.
    ///   - onConnect: Called after each (re)connect with the new connection.
    init(
        url: String, configuration: WebSocketConfiguration,
        headerCommand: (@Sendable () async throws -> [(name: String, value: String)])? = nil,
        onConnect: @escaping @Sendable (WebSocket) -> Void
    ) {
        let current = CurrentConnection()
        self.current = current
        let prepare = headerCommand.map { command in
            { @Sendable (attempt: inout WebSocketConnectAttempt) async throws in
                for header in try await command() { attempt.headers[header.name] = header.value }
            }
        }
        socket = ReconnectingWebSocket(to: url, configuration: configuration, prepare: prepare, onConnect: { connection in
            // The previous connection is released after the lock: its deinit takes the SDK's locks.
            let previous = current.connection.withLock { held in
                let previous = held
                held = connection
                return previous
            }
            _ = consume previous
            onConnect(connection)
        })
    }

    /// The task is the link's own (``close(code:reason:)`` cancels it for 1001), and `tasks`'
    /// too: it is cancelled when either is.
    func startReceiving(
        in tasks: TaskBag, deliver: @escaping @Sendable (WebSocketMessage) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        receiveStarted.withLock { $0 = true }
        receiving.addTask { [socket, receiveFinished] in
            defer { receiveFinished.complete() }
            var messages = socket.messages.makeAsyncIterator()
            while let message = await messages.next() {
                await deliver(message)
            }
            ended()
        }
        // The session's end cancels the link's tasks with its own.
        tasks.addTask { [receiving, receiveFinished] in
            await withTaskCancellationHandler {
                await receiveFinished.wait()
            } onCancel: {
                receiving.cancel()
            }
        }
    }

    func send(_ message: WebSocketMessage) async throws {
        try await socket.send(message)
    }

    /// Not offered: a message sent in pieces cannot be resent after a drop (the command
    /// line refuses `--send-file` with `--reconnect`).
    func send(streaming pieces: FilePieces) async throws {
        throw WebSocketError.invalidConfiguration("--send-file cannot be combined with --reconnect")
    }

    /// Not offered: `--stream` needs one connection (the command line refuses it with `--reconnect`).
    func startReceivingPieces(
        in tasks: TaskBag, deliver: @escaping @Sendable (ReceivedPiece) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        ended()
    }

    func ping(payload: [UInt8]?) async throws -> Duration {
        guard let connection = current.connection.withLock({ $0 }) else {
            throw WebSocketError.closed(code: .abnormalClosure, reason: "not connected")
        }
        if let payload { return try await connection.ping(payload: payload) }
        return try await connection.ping()
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        if code == .goingAway, receiveStarted.withLock({ $0 }) {
            // Cancelling the iteration closes with 1001 and ends the socket.
            receiving.cancel()
            await receiveFinished.wait()
        } else {
            await socket.close(code: code, reason: reason)
        }
    }

    var writtenMessageBytes: Int { current.connection.withLock { $0?.writtenMessageBytes ?? 0 } }

    var isOpen: Bool { !socket.state.isTerminal }

    var isConnected: Bool {
        if case .connected = socket.state { return true }
        return false
    }

    var unsentMessages: [WebSocketMessage] { socket.unsentMessages }
}
