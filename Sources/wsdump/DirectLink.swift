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

    func send(_ message: WebSocketMessage) async throws {
        try await connection.send(message)
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
