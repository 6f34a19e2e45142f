import WebSocketStreams

extension TestServer {
    /// One event of a ``Recording``: a message either way, or the conversation's ending.
    public struct RecordedEvent: Sendable, Hashable {
        /// Which side of the conversation did it.
        public enum Side: String, Sendable, Hashable {
            /// The client that recorded it.
            case client
            /// The server.
            case server
        }

        /// What happened.
        public enum Kind: Sendable, Hashable {
            /// `side` sent `message`.
            case message(WebSocketMessage, from: Side)
            /// `side` closed first, with `code` and `reason`.
            case close(code: WebSocketCloseCode, reason: String, from: Side)
            /// TCP ended without a close frame.
            case drop
        }

        /// When, since the connection opened.
        public var time: Duration
        /// What happened.
        public var kind: Kind

        /// An event at `time`.
        public init(time: Duration, kind: Kind) {
            self.time = time
            self.kind = kind
        }
    }
}
