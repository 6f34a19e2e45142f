import WebSocketStreams

extension TestServer {
    /// What the test server does on a path of your own: a Swift body that speaks your app's
    /// protocol with each client that connects there.
    ///
    /// ```swift
    /// let server = try await TestServer.start(handlers: [
    ///     "/feed": TestServer.Handler { connection in
    ///         guard case .text("subscribe")? = await connection.receive() else { return }
    ///         try await connection.send(.text("snapshot"))
    ///         try await connection.send(.text("update 1"))
    ///     },
    /// ])
    /// ```
    ///
    /// The body runs in a task of its own for each connection, concurrently with every other
    /// connection's, and is cancelled when the server stops. When it returns, the server
    /// closes the connection with 1000 (normal closure); when it throws, with 1011 (internal
    /// error) and the error's description as the reason, which the connection's record also
    /// keeps (``ConnectionRecord/handlerError``). A connection the client closed or dropped
    /// first stays as it ended.
    ///
    /// `upgrade` decides, before the server answers the opening handshake, whether to
    /// accept it: return ``UpgradeDecision/reject(status:headers:body:)`` to test your app's
    /// answer to a 401 or a 403. It runs on the server's event loop, so it must return
    /// promptly and must not block.
    public struct Handler: Sendable {
        /// Decides whether the opening handshake is accepted.
        public typealias UpgradeDecider = @Sendable (UpgradeRequest) -> UpgradeDecision
        /// Speaks to one client.
        public typealias Body = @Sendable (Connection) async throws -> Void

        /// Subprotocols this handler's connections may select, besides the server's own
        /// (`chat`, `superchat`, `json`); the first one the client offers that the server
        /// knows is selected.
        public var subprotocols: [String]
        /// Decides whether the opening handshake is accepted; `nil` accepts every one.
        public var upgrade: UpgradeDecider?
        /// Custom request headers to read beyond the standard ones and the server's usual
        /// list (`x-api-key`, `x-request-id`, `cookie`, ...): libwebsockets can only read a
        /// custom header it is asked for by name. Lowercased names, e.g. `x-tenant`.
        public var headerNames: [String]
        /// Speaks to one client.
        public var body: Body

        /// A handler that runs `body` for every client that connects on its path.
        ///
        /// - Parameters:
        ///   - subprotocols: Subprotocols its connections may select.
        ///   - headerNames: Custom request headers to read (see ``headerNames``).
        ///   - upgrade: Decides whether each opening handshake is accepted; `nil` accepts all.
        ///   - body: Speaks to one client, through its ``Connection``.
        public init(
            subprotocols: [String] = [], headerNames: [String] = [], upgrade: UpgradeDecider? = nil,
            _ body: @escaping Body
        ) {
            self.subprotocols = subprotocols
            self.headerNames = headerNames.map { $0.lowercased() }
            self.upgrade = upgrade
            self.body = body
        }
    }
}
