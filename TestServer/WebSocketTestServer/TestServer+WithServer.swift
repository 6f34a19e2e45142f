import Logging

/// Scoped servers: started, handed to a body, and stopped however the body ends.
extension TestServer {
    /// Starts a server, runs `body` with it, and stops it however `body` ends (returns,
    /// throws or is cancelled), so a failing test cannot leak a server.
    ///
    /// ```swift
    /// try await TestServer.withServer { server in
    ///     let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
    ///     // ...
    /// }
    /// ```
    ///
    /// The parameters are those of ``start(port:host:tls:compression:recordTexts:logger:unixSocketPath:)``.
    public static func withServer<Result>(
        port: Int = 0, host: String = "127.0.0.1", tls: TLS? = nil, compression: Bool = true,
        recordTexts: Bool = false, logger: Logger? = nil, unixSocketPath: String? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (TestServer) async throws -> Result
    ) async throws -> Result {
        try await withServer(
            port: port, host: host, tls: tls, compression: compression, recordTexts: recordTexts, logger: logger,
            unixSocketPath: unixSocketPath, handlers: [:], isolation: isolation, body)
    }

    /// Starts a server with `handlers`, runs `body` with it, and stops it however `body` ends (returns,
    /// throws or is cancelled), so a failing test cannot leak a server.
    ///
    /// ```swift
    /// try await TestServer.withServer(handlers: ["/feed": feed]) { server in
    ///     let connection = try await WebSocket.connect(to: server.url(path: "/feed"))
    ///     // ...
    /// }
    /// ```
    ///
    /// The parameters are those of ``start(port:host:tls:compression:recordTexts:logger:unixSocketPath:handlers:)``.
    public static func withServer<Result>(
        port: Int = 0, host: String = "127.0.0.1", tls: TLS? = nil, compression: Bool = true,
        recordTexts: Bool = false, logger: Logger? = nil, unixSocketPath: String? = nil,
        handlers: [String: Handler],
        isolation: isolated (any Actor)? = #isolation,
        _ body: (TestServer) async throws -> Result
    ) async throws -> Result {
        let server = try await start(
            port: port, host: host, tls: tls, compression: compression, recordTexts: recordTexts, logger: logger,
            unixSocketPath: unixSocketPath, handlers: handlers)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}
