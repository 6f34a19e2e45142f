import Foundation
import WebSocketStreams

/// A session over one ``WebSocket``.
struct DirectLink: SessionLink {
    let connection: WebSocket

    func startReceiving(
        deliver: @escaping @Sendable (WebSocketMessage) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        Task { [connection] in
            // An iterator, never cancelled: ending a `for await` early would close with 1001.
            var messages = connection.messages.makeAsyncIterator()
            while let message = await messages.next() {
                await deliver(message)
            }
            ended()
        }
    }

    func startReceivingPieces(
        deliver: @escaping @Sendable (ReceivedPiece) async -> Void, ended: @escaping @Sendable () -> Void
    ) {
        Task { [connection] in
            var messages = connection.messageStreams.makeAsyncIterator()
            while let message = await messages.next() {
                var pieces = message.makeAsyncIterator()
                var index = 0
                var byteCount = 0
                // One piece is read ahead, so the last is known to be the last.
                var current: Data? = try? await pieces.next()
                if current == nil {
                    await deliver(ReceivedPiece(kind: message.kind, bytes: Data(), index: 0, byteCount: 0, isLast: true))
                    continue
                }
                while let piece = current {
                    let following = try? await pieces.next()
                    byteCount += piece.count
                    await deliver(ReceivedPiece(
                        kind: message.kind, bytes: piece, index: index, byteCount: byteCount, isLast: following == nil))
                    index += 1
                    current = following
                }
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
