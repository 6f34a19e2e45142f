import FoundationEssentials

/// One message from ``WebSocket/messageStreams``, read in pieces as they arrive.
///
/// On a connection with ``WebSocketConfiguration/streamsIncomingMessages`` on, the pieces
/// are handed over as the peer's frames arrive, so a message larger than memory passes
/// through a small, constant amount of it. Otherwise the message arrives whole, as one piece.
///
/// - Text: the pieces together are valid UTF-8, checked as they arrive (an invalid
///   sequence, even one split between pieces, fails the connection with 1007), and each
///   piece ends on a code point boundary, so each decodes as UTF-8 alone.
/// - Flow control is that of ``WebSocket/messages``: pieces count against
///   ``WebSocketConfiguration/maxBufferedMessages`` and
///   ``WebSocketConfiguration/maxBufferedBytes``, and a slow reader stops the socket.
/// - Stopping early is fine: asking `messageStreams` for the next message skips what is
///   left of this one (reading and dropping it), and the connection goes on.
/// - The iteration throws the connection's ``WebSocketError`` if the connection ends inside
///   the message.
///
/// Read a message in the task that iterates `messageStreams`, before asking for the next.
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.streamsIncomingMessages = true
/// let connection = try await WebSocket.connect(to: url, configuration: configuration)
/// for await message in connection.messageStreams {
///     for try await piece in message {
///         try file.write(contentsOf: piece)
///     }
/// }
/// ```
public struct WebSocketIncomingMessage: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = WebSocketError

    /// Text or binary.
    public let kind: WebSocketMessageKind
    private let number: Int
    private let reader: StreamedMessageReader

    init(kind: WebSocketMessageKind, number: Int, reader: StreamedMessageReader) {
        self.kind = kind
        self.number = number
        self.reader = reader
    }

    /// Starts reading the message's pieces (from wherever an earlier iteration stopped).
    public func makeAsyncIterator() -> Iterator {
        Iterator(number: number, reader: reader)
    }

    /// Reads a message's pieces in order.
    public struct Iterator: AsyncIteratorProtocol {
        private let number: Int
        private let reader: StreamedMessageReader

        init(number: Int, reader: StreamedMessageReader) {
            self.number = number
            self.reader = reader
        }

        /// The next piece; `nil` after the last.
        public mutating func next() async throws(WebSocketError) -> Data? {
            try await reader.nextPiece(of: number)
        }

        /// The next piece, on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(WebSocketError) -> Data? {
            try await reader.nextPiece(of: number)
        }
    }
}
