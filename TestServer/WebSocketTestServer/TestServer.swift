import LibWebSocketsLoop
import Glibc
import Logging
import WebSocketStreams

/// A local WebSocket server for tests, built on libwebsockets' server role, with routes
/// that misbehave on purpose.
///
/// ```swift
/// let server = try await TestServer.start()                 // 127.0.0.1, a free port
/// let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
/// // ...
/// let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
/// #expect(seen.closeCodes == [.goingAway])
/// await server.stop()
/// ```
///
/// Routes (path and query choose the behaviour):
///
/// | Path | Behaviour |
/// |---|---|
/// | `/echo` | Sends every message back with its type |
/// | `/push?count=N&size=S&type=binary\|text` | Sends N messages of S bytes, each starting with its sequence number |
/// | `/close?code=C&reason=R&after=MS` | Closes with C and R after MS milliseconds |
/// | `/drop?after=MS` | Drops TCP without a close frame after MS milliseconds |
/// | `/reject?status=S&body=B&retry-after=T` | Answers the upgrade with HTTP S (401 adds `WWW-Authenticate`) |
/// | `/slow?ms=MS` | Answers the upgrade after MS milliseconds, then closes with 1000 |
/// | `/hang` | Never answers the upgrade |
/// | `/stall?resume=MS` | Completes the handshake, then stops reading (so never answers pings); with `resume`, reads again after MS ms and echoes |
/// | `/headers` | Sends the request headers it saw as a JSON text message, then echoes |
/// | `/hostile/KIND` | Breaks RFC 6455 byte by byte after the 101 (see ``HostileBehaviour``) |
/// | `/frame-echo` | Echoes every frame as it arrives, without libwebsockets' ws role |
/// | `/tls/KIND` | Breaks TLS itself after the 101: `truncated-record`, `reset-mid-record`, `close-notify` (TLS servers only) |
///
/// Raw routes (`/slow`, `/hang`, `/uncompressed`, `/huge-headers`, `/hostile/`,
/// `/frame-echo`), which write bytes to the socket themselves, work over both `ws://` and
/// `wss://`: a TLS server serves them, and the `/tls/` routes, on a second port where it
/// runs TLS itself (``rawTLSPort``). ``url(path:)`` picks the right port, so a test reads
/// the same either way:
///
/// ```swift
/// let server = try await TestServer.start(tls: .init())
/// var configuration = WebSocketConfiguration()
/// configuration.tls.trustedCAFile = server.caCertificateFile
/// let connection = try await WebSocket.connect(to: server.url(path: "/hostile/masked"), configuration: configuration)
/// ```
///
/// The server accepts the subprotocols `chat`, `superchat` and `json`, negotiates
/// permessage-deflate unless started with `compression: false`, and records every
/// connection (see ``Snapshot``).
public final class TestServer: Sendable {
    /// TLS for a `wss://` test server: a CA and a server certificate generated at start.
    public struct TLS: Sendable {
        /// Names and addresses the server certificate is valid for.
        public var hostnames: [String]
        /// Days the certificate is valid; negative makes it already expired.
        public var validDays: Int

        /// A certificate for `localhost` and `127.0.0.1`, valid for 30 days.
        public init(hostnames: [String] = ["localhost", "127.0.0.1"], validDays: Int = 30) {
            self.hostnames = hostnames
            self.validDays = validDays
        }
    }

    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (chosen by the system when started with port 0).
    public let port: Int
    /// The Unix domain socket the server also listens on (see ``unixSocketURL(path:)``), or
    /// `nil` when started without one.
    public let unixSocketPath: String?
    /// The generated certificates of a TLS server; `nil` without TLS.
    public let certificates: TestCertificates?
    /// The port of a TLS server's raw TLS listener, which serves the raw routes (`/hostile/`,
    /// `/frame-echo`, `/slow`, ...) and the `/tls/` routes over `wss://`, running TLS itself
    /// with the same certificate; `nil` without TLS. ``url(path:)`` uses it for those routes.
    public var rawTLSPort: Int? { rawTLSListener?.port }
    let thread: EventLoopThread
    let loop: ServerLoop
    private let recorder: ServerRecorder
    private let rawTLSListener: RawTLSListener?
    private let runner: HandlerRunner?

    private init(
        host: String, port: Int, unixSocketPath: String?, certificates: TestCertificates?, thread: EventLoopThread,
        loop: ServerLoop, recorder: ServerRecorder, rawTLSListener: RawTLSListener?, runner: HandlerRunner?
    ) {
        self.runner = runner
        self.host = host
        self.port = port
        self.unixSocketPath = unixSocketPath
        self.certificates = certificates
        self.thread = thread
        self.loop = loop
        self.recorder = recorder
        self.rawTLSListener = rawTLSListener
    }

    /// Starts a server and returns once it listens (with TLS, on both of its ports).
    ///
    /// - Parameters:
    ///   - port: The port; 0 (the default) lets the system choose a free one.
    ///   - host: The address to listen on; loopback by default.
    ///   - tls: Serve `wss://` with freshly generated certificates.
    ///   - compression: Whether to negotiate permessage-deflate.
    ///   - recordTexts: Keep every received text message in ``ConnectionRecord/textsReceived``.
    ///   - logger: Receives libwebsockets' server log lines; silent by default.
    ///   - unixSocketPath: Also listen on this Unix domain socket (at most 107 bytes; a stale
    ///     socket file there is replaced), for `ws+unix:` and `wss+unix:` clients. The file
    ///     is removed when the server stops.
    public static func start(
        port: Int = 0, host: String = "127.0.0.1", tls: TLS? = nil, compression: Bool = true,
        recordTexts: Bool = false, logger: Logger? = nil, unixSocketPath: String? = nil
    ) async throws -> TestServer {
        try await start(
            port: port, host: host, tls: tls, compression: compression, recordTexts: recordTexts, logger: logger,
            unixSocketPath: unixSocketPath, handlers: [:], fallbackHandler: nil)
    }

    /// Starts a server that also serves paths of your own, each with its ``Handler``, and
    /// returns once it listens.
    ///
    /// ```swift
    /// let server = try await TestServer.start(handlers: [
    ///     "/feed": TestServer.Handler { connection in
    ///         for await message in connection.messages { try await connection.send(message) }
    ///     },
    /// ])
    /// ```
    ///
    /// - Parameters:
    ///   - port: The port; 0 (the default) lets the system choose a free one.
    ///   - host: The address to listen on; loopback by default.
    ///   - tls: Serve `wss://` with freshly generated certificates.
    ///   - compression: Whether to negotiate permessage-deflate.
    ///   - recordTexts: Keep every received text message in ``ConnectionRecord/textsReceived``.
    ///   - logger: Receives libwebsockets' server log lines; silent by default.
    ///   - unixSocketPath: Also listen on this Unix domain socket, as in
    ///     ``start(port:host:tls:compression:recordTexts:logger:unixSocketPath:)``.
    ///   - handlers: Paths of your own, each served by its ``Handler`` (a query is passed
    ///     through). A path that a built-in route uses is refused.
    /// - Throws: ``TestServerError/invalidHandlerPath(_:)`` for a handler path that is
    ///   taken or not a path; ``TestServerError/couldNotListen(_:)``.
    public static func start(
        port: Int = 0, host: String = "127.0.0.1", tls: TLS? = nil, compression: Bool = true,
        recordTexts: Bool = false, logger: Logger? = nil, unixSocketPath: String? = nil,
        handlers: [String: Handler]
    ) async throws -> TestServer {
        for path in handlers.keys.sorted() {
            guard path.hasPrefix("/"), !path.contains("?"), !path.contains(" ") else {
                throw TestServerError.invalidHandlerPath("\(path) is not a path: it must start with / and have no query")
            }
            if ServerRoute.isBuiltIn(path: path) {
                throw TestServerError.invalidHandlerPath("\(path) is a built-in route of the test server; choose another path")
            }
        }
        return try await start(
            port: port, host: host, tls: tls, compression: compression, recordTexts: recordTexts, logger: logger,
            unixSocketPath: unixSocketPath, handlers: handlers, fallbackHandler: nil)
    }

    /// Starts a server whose `fallbackHandler`, when given, serves every path, built-in ones
    /// included (`TestServer --replay`).
    package static func start(
        port: Int, host: String, tls: TLS?, compression: Bool, recordTexts: Bool, logger: Logger?,
        unixSocketPath: String?, handlers: [String: Handler], fallbackHandler: Handler?
    ) async throws -> TestServer {
        let certificates = try tls.map { try TestCertificates.generate(hostnames: $0.hostnames, validDays: $0.validDays) }
        let recorder = ServerRecorder()
        let loop = ServerLoop(
            settings: .init(host: host, port: port, compression: compression, certificates: certificates,
                            recordTexts: recordTexts,
                            logger: logger ?? Logger(label: "TestServer", factory: { _ in SwiftLogNoOpLogHandler() }),
                            unixSocketPath: unixSocketPath, handlers: handlers, fallbackHandler: fallbackHandler),
            recorder: recorder)
        let runner = handlers.isEmpty && fallbackHandler == nil ? nil : HandlerRunner(recorder: recorder)
        loop.runner = runner
        // epoll under lws, as the client: 15,000 connections cost a server pass no more than 10.
        let thread = EventLoopThread(name: "test-server", delegate: loop, backend: .chosen(preferring: .libev))
        loop.thread = thread
        do {
            try await thread.start()
        } catch {
            certificates?.remove()
            await runner?.stop()
            throw TestServerError.couldNotListen("\(host):\(port) (is the port in use?)")
        }
        // Written on the loop thread before `start` returned.
        let bound = loop.boundPort
        guard bound > 0 else {
            await thread.shutdown()
            await runner?.stop()
            certificates?.remove()
            throw TestServerError.couldNotListen("\(host):\(port)")
        }
        if let unixSocketPath, !loop.listensOnUnixSocket {
            await thread.shutdown()
            await runner?.stop()
            certificates?.remove()
            throw TestServerError.couldNotListen("unix socket \(unixSocketPath)")
        }
        let rawTLSListener: RawTLSListener?
        do {
            rawTLSListener = try certificates.map { try RawTLSListener.start(host: host, certificates: $0, recorder: recorder) }
        } catch {
            await thread.shutdown()
            await runner?.stop()
            certificates?.remove()
            throw error
        }
        return TestServer(
            host: host, port: bound, unixSocketPath: unixSocketPath, certificates: certificates, thread: thread, loop: loop, recorder: recorder,
            rawTLSListener: rawTLSListener, runner: runner)
    }

    /// The URL of `path` (with its query, if any) on this server, e.g.
    /// `ws://127.0.0.1:41234/echo`.
    ///
    /// On a TLS server, raw routes and `/tls/` routes are on the raw TLS listener's port
    /// (``rawTLSPort``), every other route on ``port``.
    public func url(path: String = "/echo") -> String {
        let target = path.hasPrefix("/") ? path : "/" + path
        let scheme = certificates == nil ? "ws" : "wss"
        let hostPart = host.contains(":") ? "[\(host)]" : host
        var port = self.port
        if let rawTLSPort, ServerRoute(target: target).isServedByRawTLSListener { port = rawTLSPort }
        return "\(scheme)://\(hostPart):\(port)\(target)"
    }

    /// The `ws+unix:` (or, with TLS, `wss+unix:`) URL of `path` on this server's Unix domain
    /// socket, e.g. `ws+unix:///tmp/server.sock:/echo`; `nil` without ``unixSocketPath``.
    /// A TLS server's certificate names `localhost`, the host such URLs verify.
    public func unixSocketURL(path: String = "/echo") -> String? {
        guard let unixSocketPath else { return nil }
        let target = path.hasPrefix("/") ? path : "/" + path
        return "\(certificates == nil ? "ws" : "wss")+unix://\(unixSocketPath):\(target)"
    }

    /// The CA file to trust for a TLS server.
    public var caCertificateFile: String? { certificates?.caCertificateFile }

    /// What the server has recorded so far.
    public var snapshot: Snapshot { recorder.snapshot }

    /// Waits until `condition` holds for the server's record, for at most `timeout`.
    ///
    /// - Throws: ``TestServerError/timedOut(_:)`` when it does not.
    @discardableResult
    public func waitUntil(
        timeout: Duration = .seconds(5), _ description: String = "the test server condition",
        _ condition: @escaping @Sendable (Snapshot) -> Bool
    ) async throws -> Snapshot {
        try await recorder.waitUntil(timeout: timeout, description, condition)
    }

    /// Stops listening, drops every connection, cancels every handler and waits for them,
    /// and frees the server's threads and files.
    public func stop() async {
        await rawTLSListener?.stop()
        await thread.shutdown()
        await runner?.stop()
        certificates?.remove()
        if let unixSocketPath { unlink(unixSocketPath) }
    }
}
