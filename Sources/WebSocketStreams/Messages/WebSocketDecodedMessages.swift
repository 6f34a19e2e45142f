import FoundationEssentials

/// The messages of a socket decoded from JSON, from ``WebSocketProtocol/messages(decoding:decoder:)``.
///
/// It throws ``WebSocketError`` with code ``WebSocketError/Code/undecodableMessage`` at the
/// first message that does not decode, after closing the socket with 1007, and finishes
/// when the socket ends.
public struct WebSocketDecodedMessages<Value: Decodable>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = WebSocketError

    private let socket: any WebSocketProtocol
    private let decoder: JSONDecoder

    init(socket: any WebSocketProtocol, decoder: JSONDecoder) {
        self.socket = socket
        self.decoder = decoder
    }

    /// Starts the one iteration of the socket's messages.
    public func makeAsyncIterator() -> Iterator {
        Iterator(socket: socket, messages: socket.messages.makeAsyncIterator(), decoder: decoder)
    }

    /// Decodes the socket's messages one by one.
    public struct Iterator: AsyncIteratorProtocol {
        private let socket: any WebSocketProtocol
        private var messages: AsyncStream<WebSocketMessage>.AsyncIterator
        private let decoder: JSONDecoder
        private var failed = false

        init(socket: any WebSocketProtocol, messages: AsyncStream<WebSocketMessage>.AsyncIterator, decoder: JSONDecoder) {
            self.socket = socket
            self.messages = messages
            self.decoder = decoder
        }

        /// The next decoded message; `nil` once the socket has ended (or after a failure).
        public mutating func next() async throws(WebSocketError) -> Value? {
            try await next(isolation: nil)
        }

        /// The next decoded message, on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(WebSocketError) -> Value? {
            guard !failed, let message = await messages.next(isolation: actor) else { return nil }
            do {
                return try message.withPayloadBytes { bytes in
                    try decoder.decode(Value.self, from: Data(bytes))
                }
            } catch {
                failed = true
                let failure = WebSocketError.undecodableMessage(message, as: Value.self, detail: Self.describe(error))
                let reason = "message did not decode as \(Self.typeName)"
                // A single connection keeps the failure as its `error`.
                (socket as? WebSocket)?.connection.closeFailing(with: failure, code: .invalidFramePayloadData, reason: reason)
                await socket.close(code: .invalidFramePayloadData, reason: reason)
                throw failure
            }
        }

        /// The type's name, short enough for a close reason (123 bytes).
        private static var typeName: String { String(String(describing: Value.self).utf8.prefix(80)) ?? "the expected type" }

        /// A decoding error in a sentence: what was wrong, and where.
        private static func describe(_ error: any Error) -> String {
            guard let error = error as? DecodingError else { return String(describing: error) }
            func path(_ context: DecodingError.Context) -> String {
                let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
                return keys.isEmpty ? "" : " at \(keys)"
            }
            switch error {
            case .keyNotFound(let key, let context): return "key '\(key.stringValue)' not found\(path(context))"
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                return context.debugDescription + path(context)
            @unknown default: return String(describing: error)
            }
        }
    }
}
