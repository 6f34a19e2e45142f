import WebSocketStreams

extension TestServer {
    /// What the server saw of one connection.
    public struct ConnectionRecord: Sendable, Hashable {
        /// 1, 2, 3... in the order handshakes completed (or were taken over by a raw route).
        public var id: Int
        /// The request path without the query, e.g. `/echo`.
        public var path: String
        /// The query parameters, e.g. `["count": "10"]`.
        public var query: [String: String]
        /// Request headers the server could read, keyed by lowercased name.
        public var headers: [String: String]
        /// The subprotocol the server selected, if any.
        public var subprotocol: String?
        /// Whether permessage-deflate was negotiated.
        public var compressed: Bool
        /// Whether the client resumed an earlier TLS session (an abbreviated handshake);
        /// `false` without TLS.
        public var tlsResumed = false
        /// The client's address as the server saw it, e.g. `127.0.0.5` (connections served by
        /// libwebsockets' listener; `nil` on raw routes).
        public var peerAddress: String?
        /// When the handshake completed.
        public var openedAt: ContinuousClock.Instant
        /// Data messages received from the client.
        public var messagesReceived = 0
        /// Payload bytes received from the client.
        public var bytesReceived = 0
        /// The text messages received, in order, when the server was started with `recordTexts`.
        public var textsReceived: [String] = []
        /// Whole data messages that had reached the server when it dropped the connection
        /// (``TestServer/disconnectAll()``, `/drop`), unread: in its socket's receive buffer,
        /// or in what its reader held. The server reads them out at the drop and discards
        /// them; no route handled them, and ``messagesReceived`` does not count them. The
        /// client's TCP saw their bytes acknowledged, so no client can tell them from
        /// messages the server read: only an application-level acknowledgement covers them.
        public var messagesDiscardedAtDrop = 0
        /// The text messages among ``messagesDiscardedAtDrop``, in order, when the server was
        /// started with `recordTexts`. A compressed message, or one whose frame libwebsockets
        /// had begun to parse at the drop, is counted there but its text cannot be kept.
        public var textsDiscardedAtDrop: [String] = []
        /// Whether the drop cut a message: its start had reached the server, not its end
        /// (or what the socket held could not be decoded as client frames).
        public var partialMessageDiscardedAtDrop = false
        /// Bytes the server read out of the socket at the drop (decrypted, over TLS).
        public var bytesDiscardedAtDrop = 0
        /// The close code in the client's close frame; `nil` if none came.
        public var closeCodeReceived: WebSocketCloseCode?
        /// The reason in the client's close frame.
        public var closeReasonReceived = ""
        /// Pongs received from the client (counted on `/hostile/` routes only; elsewhere
        /// libwebsockets consumes them).
        public var pongsReceived = 0
        /// When the client's close frame arrived.
        public var closeReceivedAt: ContinuousClock.Instant?
        /// When the connection ended.
        public var closedAt: ContinuousClock.Instant?
        /// The close code the server sent in its own close frame (a handler's
        /// ``Connection/close(code:reason:)``, `/close`, ``goAway(code:timeout:)``); `nil` if it
        /// sent none or only answered the client's.
        public var closeCodeSent: WebSocketCloseCode?
        /// The reason in the server's own close frame.
        public var closeReasonSent: String?
        /// What a handler threw, described; the connection was closed with 1011.
        public var handlerError: String?
    }

    /// Everything the server has recorded so far.
    public struct Snapshot: Sendable {
        /// Every connection, in handshake order.
        public var connections: [ConnectionRecord]
        /// Handshakes the server rejected or refused (e.g. `/reject`), with their status.
        public var rejectedHandshakes: [(path: String, status: Int)]

        /// The connection with `id`.
        public func connection(_ id: Int) -> ConnectionRecord? {
            connections.first { $0.id == id }
        }

        /// Close codes received from clients, in connection order.
        public var closeCodes: [WebSocketCloseCode] {
            connections.compactMap(\.closeCodeReceived)
        }

        /// Connections whose handshake completed.
        public var handshakeCount: Int { connections.count }

        /// Connections still open.
        public var openConnections: [ConnectionRecord] {
            connections.filter { $0.closedAt == nil }
        }

        /// Every text message received, over all connections, in connection order.
        public var allTextsReceived: [String] {
            connections.flatMap(\.textsReceived)
        }

        /// Every text message read out of a socket and discarded when the server dropped its
        /// connection, over all connections, in connection order (see
        /// ``ConnectionRecord/textsDiscardedAtDrop``).
        public var allTextsDiscardedAtDrop: [String] {
            connections.flatMap(\.textsDiscardedAtDrop)
        }
    }
}
