import Foundation
import TaskLifetimes
import WebSocketStreams

/// A session over one ``WebSocket``.
struct DirectLink: SessionLink {
    let connection: WebSocket

    func startReceiving(
        in tasks: TaskBag, deliver: @escaping @Sendable (WebSocketMessage) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        tasks.addTask { [connection] in
            // An iterator, cancelled only when the session is over: ending a `for await`
            // early would close with 1001.
            var messages = connection.messages.makeAsyncIterator()
            while let message = await messages.next() {
                await deliver(message)
            }
            ended()
        }
    }

    func startReceivingPieces(
        in tasks: TaskBag, deliver: @escaping @Sendable (ReceivedPiece) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        tasks.addTask { [connection] in
            var messages = connection.messageStreams.makeAsyncIterator()
            while let message = await messages.next() {
                // Each piece is shown as it comes; the end, once the message has no more.
                var count = 0
                var byteCount = 0
                var pieces = message.makeAsyncIterator()
                while let piece = try? await pieces.next() {
                    byteCount += piece.count
                    await deliver(ReceivedPiece(kind: message.kind, bytes: piece, index: count, byteCount: byteCount, isLast: false))
                    count += 1
                }
                await deliver(ReceivedPiece(kind: message.kind, bytes: Data(), index: count, byteCount: byteCount, isLast: true))
            }
            ended()
        }
    }

    func send(_ message: WebSocketMessage) async throws {
        try await connection.send(message)
    }

    func send(streaming pieces: FilePieces) async throws {
        try await connection.send(streaming: pieces, as: .binary)
    }

    func ping(payload: [UInt8]?) async throws -> Duration {
        if let payload { return try await connection.ping(payload: payload) }
        return try await connection.ping()
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        await connection.close(code: code, reason: reason)
    }

    var writtenMessageBytes: Int { connection.writtenMessageBytes }

    var isOpen: Bool { connection.isOpen }

    var isConnected: Bool { connection.isOpen }

    var unsentMessages: [WebSocketMessage] { connection.unsentMessages }
}
