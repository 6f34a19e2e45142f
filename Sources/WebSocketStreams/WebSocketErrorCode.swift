extension WebSocketError {
    /// The kind of a ``WebSocketError``.
    ///
    /// New kinds may be added in later versions: when you switch over codes, keep a
    /// `default` branch.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable {
            case invalidURL, connectionFailed, timedOut, tlsFailure, handshakeRejected, proxyRejected
            case closed, protocolViolation, messageTooLarge, pongTimeout, invalidConfiguration, sendQueueFull
            case undecodableMessage, invalidMessage, prepareFailed, invalidUse
        }

        private let kind: Kind

        private init(_ kind: Kind) {
            self.kind = kind
        }

        /// The URL cannot be used. Context: ``WebSocketError/reason``.
        public static let invalidURL = Code(.invalidURL)
        /// No connection could be made, or an open one was lost without a close frame.
        /// Context: ``WebSocketError/reason``.
        public static let connectionFailed = Code(.connectionFailed)
        /// The opening handshake did not finish within ``WebSocketConfiguration/connectTimeout``.
        public static let timedOut = Code(.timedOut)
        /// TLS failed (certificate, handshake). Context: ``WebSocketError/reason`` (OpenSSL's).
        public static let tlsFailure = Code(.tlsFailure)
        /// The server refused the upgrade. Context: ``WebSocketError/httpStatus``,
        /// ``WebSocketError/headers``, ``WebSocketError/body``.
        public static let handshakeRejected = Code(.handshakeRejected)
        /// The HTTP proxy refused the tunnel. Context: ``WebSocketError/httpStatus``,
        /// ``WebSocketError/headers``.
        public static let proxyRejected = Code(.proxyRejected)
        /// The connection is closed or closing. Context: ``WebSocketError/closeCode``,
        /// ``WebSocketError/closeReason``.
        public static let closed = Code(.closed)
        /// The peer broke the protocol and this side failed the connection. Context:
        /// ``WebSocketError/closeCode`` (1002 or 1007), ``WebSocketError/reason``.
        public static let protocolViolation = Code(.protocolViolation)
        /// A received message exceeded ``WebSocketConfiguration/maxMessageSize``, or came in more
        /// frames than ``WebSocketConfiguration/maxFragmentsPerMessage`` (closed with 1009).
        /// Context: ``WebSocketError/reason`` names the limit.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The peer stopped answering keep-alive pings.
        public static let pongTimeout = Code(.pongTimeout)
        /// The configuration cannot be used. Context: ``WebSocketError/reason``.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A ``ReconnectingWebSocket``'s send queue is full. Context: ``WebSocketError/reason``.
        public static let sendQueueFull = Code(.sendQueueFull)
        /// A message did not decode as the type asked of ``WebSocketProtocol/messages(decoding:decoder:)``
        /// (the socket was closed with 1007). Context: ``WebSocketError/reason`` (the decoder's
        /// words and the start of the message).
        public static let undecodableMessage = Code(.undecodableMessage)
        /// A message given to send cannot be sent as it is: the pieces of a streamed text
        /// message (``WebSocket/send(streaming:as:)``) are not UTF-8. Context:
        /// ``WebSocketError/reason``.
        public static let invalidMessage = Code(.invalidMessage)
        /// A ``ReconnectingWebSocket``'s `prepare` hook threw before an attempt, so the
        /// socket ended (retrying without credentials would only hammer the server).
        /// Context: ``WebSocketError/reason`` (the description of the error it threw).
        public static let prepareFailed = Code(.prepareFailed)
        /// The connection was read in a way it does not allow: ``WebSocket/messages`` (or
        /// ``WebSocket/messageBatches``) on a connection that streams its messages
        /// (``WebSocketConfiguration/streamsIncomingMessages``: read ``WebSocket/messageStreams``),
        /// or a second reader (a task iterating `messages`, or calling ``WebSocket/receive()``)
        /// while another one reads. Context: ``WebSocketError/reason`` says what to do instead.
        public static let invalidUse = Code(.invalidUse)

        /// The code's name, e.g. `handshakeRejected`.
        public var description: String { kind.rawValue }
    }
}
