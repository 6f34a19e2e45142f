extension WebSocketWireEvent {
    /// The kind of a ``WebSocketWireEvent``.
    ///
    /// New kinds may be added in later versions: when you switch over kinds, keep a
    /// `default` branch.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Name: String, Hashable, Sendable {
            case handshakeRequestSent, handshakeResponseReceived
            case pingSent, pongReceived, closeSent, closeReceived
        }

        private let name: Name

        private init(_ name: Name) {
            self.name = name
        }

        /// The opening handshake's HTTP request went out. Details: ``WebSocketWireEvent/httpHead``.
        public static let handshakeRequestSent = Kind(.handshakeRequestSent)
        /// The head of the server's answer to the opening handshake arrived, whatever its
        /// status. Details: ``WebSocketWireEvent/httpHead``.
        public static let handshakeResponseReceived = Kind(.handshakeResponseReceived)
        /// A ping went out: a keep-alive or one of ``WebSocket/ping()``. Details:
        /// ``WebSocketWireEvent/isKeepalive``.
        public static let pingSent = Kind(.pingSent)
        /// The pong answering this side's ping arrived. Details: ``WebSocketWireEvent/roundTrip``.
        public static let pongReceived = Kind(.pongReceived)
        /// This side's close frame went out. Details: ``WebSocketWireEvent/closeCode``,
        /// ``WebSocketWireEvent/closeReason``.
        public static let closeSent = Kind(.closeSent)
        /// The peer's close frame arrived. Details: ``WebSocketWireEvent/closeCode``,
        /// ``WebSocketWireEvent/closeReason``.
        public static let closeReceived = Kind(.closeReceived)

        /// The kind's name, e.g. `pongReceived`.
        public var description: String { name.rawValue }

        /// Whether this side sent what the kind describes (`false`: it received it).
        public var isSent: Bool {
            switch name {
            case .handshakeRequestSent, .pingSent, .closeSent: true
            case .handshakeResponseReceived, .pongReceived, .closeReceived: false
            }
        }

        /// The frame or message the kind is about: `ping`, `pong`, `close`, or `handshake`.
        var frameName: String {
            switch name {
            case .handshakeRequestSent, .handshakeResponseReceived: "handshake"
            case .pingSent: "ping"
            case .pongReceived: "pong"
            case .closeSent, .closeReceived: "close"
            }
        }
    }
}
