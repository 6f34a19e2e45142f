extension TestServer {
    /// How a handler answers an opening handshake (``Handler/upgrade``).
    public enum UpgradeDecision: Sendable, Hashable {
        /// Accept: the server answers 101 and runs the handler's body.
        case accept
        /// Refuse with HTTP `status`, extra response `headers` (e.g. `WWW-Authenticate`) and
        /// a plain-text `body`, as a server that checks credentials does. The client's
        /// connect fails with `WebSocketError.Code.handshakeRejected` carrying all three.
        case reject(status: Int, headers: [String: String] = [:], body: String = "")
    }
}
