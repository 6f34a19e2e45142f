import FoundationEssentials
import Synchronization
import SynchronizationSupport
import WebSocketCore

/// One iteration of ``WebSocket/messageStreams``: the pieces of the connection's
/// messages, handed out message by message.
///
/// On a connection that streams (``WebSocketConfiguration/streamsIncomingMessages``), the
/// inbound queue holds pieces: each non-empty, of its message's kind, and an empty one
/// ends each message (`MessageAssembler`, in WebSocketCore). Otherwise each item is a whole message, read
/// as one piece. Asking for the next message skips what is left of the current one, in
/// order, so the connection stays usable however little of a message was read.
// @unchecked: `current`, `ended` and `first` are touched only inside `exclusively`,
// which the atomic `busy` flag keeps to one caller at a time (a second one is refused
// with `invalidUse` and touches nothing).
final class StreamedMessageReader: @unchecked Sendable {
    private let iteration: MessageIteration
    private let connection: ClientConnection
    /// Whether the connection streams its messages (pieces and ends) or delivers them whole.
    private let streams: Bool
    private let busy = Atomic<Bool>(false)
    /// The number of the message being read (1 for the first).
    private var current = 0
    /// Whether the current message's last piece has been taken from the connection.
    private var ended = true
    /// A piece of the current message already taken (its first, read to learn its kind).
    private var first: Data?

    init(connection: ClientConnection) {
        self.connection = connection
        iteration = MessageIteration(connection: connection)
        streams = connection.configuration.streamsIncomingMessages
    }

    /// The next message, after skipping the rest of the current one; `nil` at the end.
    nonisolated(nonsending)
    func nextMessage() async -> WebSocketIncomingMessage? {
        await exclusively(refused: nil) { () async -> WebSocketIncomingMessage? in
            first = nil
            while !ended {
                guard let piece = await iteration.next() else { return nil }
                ended = piece.byteCount == 0
            }
            guard let piece = await iteration.next() else { return nil }
            current += 1
            ended = !streams || piece.byteCount == 0
            first = piece.byteCount == 0 ? nil : Self.bytes(of: piece)
            return WebSocketIncomingMessage(kind: piece.kind, number: current, reader: self)
        }
    }

    /// The next piece of message `number`; `nil` after its last (or once the reader moved
    /// past it). Throws the connection's error when it ended inside the message.
    nonisolated(nonsending)
    func nextPiece(of number: Int) async throws(WebSocketError) -> Data? {
        let result = await exclusively(refused: .failure(.secondReader)) { () async -> Result<Data?, WebSocketError> in
            guard number == current else { return .success(nil) }
            if let piece = first {
                first = nil
                return .success(piece)
            }
            guard !ended else { return .success(nil) }
            guard let piece = await iteration.next() else {
                ended = true
                return .failure(endedInsideMessage)
            }
            ended = piece.byteCount == 0
            return .success(ended ? nil : Self.bytes(of: piece))
        }
        return try result.get()
    }

    /// Why a message stopped before its end: the error that ended the connection, or its close.
    private var endedInsideMessage: WebSocketError {
        let ending = connection.machine.withLock { $0.ending }
        if let error = ending?.error { return error }
        return .closed(code: ending?.closeCode ?? .abnormalClosure, reason: "the connection closed inside a message")
    }

    /// Runs `body` unless another task is inside the reader: then the connection ends with
    /// ``WebSocketError/Code/invalidUse`` (two readers would split its pieces) and the
    /// caller gets `refused`.
    nonisolated(nonsending)
    private func exclusively<Value>(refused: Value, _ body: () async -> Value) async -> Value {
        if busy.exchange(true, ordering: .acquiring) {
            connection.closeFailing(with: .secondReader, code: .internalServerError, reason: "two readers of messages")
            return refused
        }
        defer { busy.store(false, ordering: .releasing) }
        return await body()
    }

    private static func bytes(of piece: WebSocketMessage) -> Data {
        switch piece {
        case .binary(let data): data
        case .text(let string): Data(string.utf8)
        }
    }
}
