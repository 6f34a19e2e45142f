extension TestServer {
    /// The opening handshake a client sent to a handler's path, as
    /// ``Handler/upgrade`` sees it before the server answers.
    public struct UpgradeRequest: Sendable, Hashable {
        /// The request path without the query, e.g. `/feed`.
        public var path: String
        /// The query parameters, decoded, e.g. `["token": "abc"]`.
        public var query: [String: String]
        /// The request headers the server could read, keyed by lowercased name (see
        /// ``Handler/headerNames``).
        public var headers: [String: String]
        /// The subprotocols the client offered, in its order of preference.
        public var offeredSubprotocols: [String]

        /// A request with these parts (for testing a decider on its own).
        public init(path: String, query: [String: String] = [:], headers: [String: String] = [:], offeredSubprotocols: [String] = []) {
            self.path = path
            self.query = query
            self.headers = headers
            self.offeredSubprotocols = offeredSubprotocols
        }
    }
}
