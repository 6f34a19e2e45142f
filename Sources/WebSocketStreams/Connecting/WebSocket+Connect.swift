import FoundationEssentials
import SynchronizationSupport
import Logging
import WebSocketCore

extension WebSocket {
    /// Opens a connection and returns once the opening handshake has succeeded.
    ///
    /// ```swift
    /// let connection = try await WebSocket.connect(to: "wss://example.org/feed")
    /// ```
    ///
    /// The host name is resolved off the event loop's thread; TCP, TLS and the HTTP
    /// upgrade then run on it, all within ``WebSocketConfiguration/connectTimeout``.
    ///
    /// - Parameters:
    ///   - url: A `ws://` or `wss://` URL, or `ws+unix:///path/to.sock:/request-path` (and
    ///     `wss+unix:`) for a Unix domain socket. User info (`wss://user:pass@host/`) is sent
    ///     as Basic authorization.
    ///   - configuration: Headers, TLS, timeouts, limits; see ``WebSocketConfiguration``.
    ///   - eventLoop: The loop that services the connection; by default the least loaded loop
    ///     of ``WebSocketEventLoopGroup/shared`` (see ``WebSocketEventLoopGroup/next()``).
    /// - Throws: ``WebSocketError`` saying what failed (``WebSocketError/invalidURL(_:)``,
    ///   ``WebSocketError/connectionFailed(_:)``, ``WebSocketError/timedOut``,
    ///   ``WebSocketError/tlsFailure(_:)``, ``WebSocketError/handshakeRejected(status:headers:body:)``, ``WebSocketError/proxyRejected(status:headers:)``, ``WebSocketError/proxyRejected(_:)``,
    ///   ``WebSocketError/invalidConfiguration(_:)``), or `CancellationError`.
    public static func connect(
        to url: String,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        eventLoop: WebSocketEventLoop? = nil
    ) async throws -> WebSocket {
        let metrics = ConnectionMetrics(configuration.metrics)
        do {
            return try await open(
                url, configuration: configuration, eventLoop: eventLoop ?? WebSocketEventLoopGroup.shared.next(), metrics: metrics)
        } catch {
            metrics?.connectFailed(error)
            throw error
        }
    }

    /// The work of ``connect(to:configuration:eventLoop:)-(String,_,_)``, with the metrics
    /// that count its failures: one hop, then one more per redirect followed
    /// (``RedirectChain``), all within one ``WebSocketConfiguration/connectTimeout``, in a
    /// span when a tracer is active (``ConnectSpan``).
    ///
    /// The common case (no tracer, no redirect) runs in small async frames: redirects and
    /// tracing live in functions of their own, entered only when needed, so opening many
    /// connections at once does not pay for their state.
    private static func open(
        _ url: String, configuration: WebSocketConfiguration, eventLoop: WebSocketEventLoop,
        metrics: ConnectionMetrics?
    ) async throws -> WebSocket {
        try RequestInjectionGuard.check(url: url)
        let parsed = try WebSocketError.reporting { () throws(ConnectFailure) in try WebSocketURL(parsing: url) }
        try ConfigurationValidator.validate(configuration)
        let startedAt = ContinuousClock.now
        let hop = ConnectHop(
            eventLoop: eventLoop, startedAt: startedAt, deadline: startedAt + configuration.connectTimeout, metrics: metrics)
        try await eventLoop.ensureStarted()
        if let span = ConnectSpan.start(url: parsed) {
            return try await openTraced(parsed, configuration: configuration, hop: hop, span: span)
        }
        var redirects = 0
        return try await openFollowingRedirects(parsed, configuration: configuration, hop: hop, redirects: &redirects)
    }

    /// ``open(_:configuration:eventLoop:metrics:)`` inside `span`, its context injected into
    /// the upgrade request.
    private static func openTraced(
        _ url: WebSocketURL, configuration: WebSocketConfiguration, hop: ConnectHop, span: ConnectSpan
    ) async throws -> WebSocket {
        var traced = configuration
        traced.headers = span.injectingContext(into: configuration.headers)
        var redirects = 0
        do {
            let connection = try await openFollowingRedirects(url, configuration: traced, hop: hop, redirects: &redirects)
            span.opened(connection.connectTimings)
            return connection
        } catch {
            span.failed(error, redirects: redirects)
            throw error
        }
    }

    /// Connects to `url`, and when it answers with a redirect to follow, follows it.
    /// `redirects` is set to the number followed, for a span.
    private static func openFollowingRedirects(
        _ url: WebSocketURL, configuration: WebSocketConfiguration, hop: ConnectHop, redirects: inout Int
    ) async throws -> WebSocket {
        do {
            return try await hop.open(url, configuration: configuration, redirects: 0)
        } catch let error as WebSocketError where RedirectChain.isRedirect(error, maxRedirects: configuration.maxRedirects) {
            return try await followRedirects(from: url, after: error, configuration: configuration, hop: hop, redirects: &redirects)
        }
    }

    /// Follows the redirect `error` from `start`, and each further one, as ``RedirectChain`` allows.
    private static func followRedirects(
        from start: WebSocketURL, after error: WebSocketError, configuration: WebSocketConfiguration, hop: ConnectHop,
        redirects: inout Int
    ) async throws -> WebSocket {
        var chain = RedirectChain(start: start, maxRedirects: configuration.maxRedirects)
        var hopConfiguration = configuration
        var refusal = error
        while true {
            switch chain.next(after: refusal) {
            case .notARedirect:
                throw refusal
            case .refuse(let reason):
                throw reason
            case .follow(let dropCredentials):
                redirects = chain.redirects
                if dropCredentials {
                    hopConfiguration.headers = RedirectChain.withoutCredentials(
                        hopConfiguration.headers, sensitive: configuration.sensitiveHeaders)
                }
                configuration.logger.debug(
                    "following a redirect (\(refusal.httpStatus ?? 0)) to \(chain.current.hostHeader)")
            }
            do {
                return try await hop.open(chain.current, configuration: hopConfiguration, redirects: chain.redirects)
            } catch let error as WebSocketError {
                refusal = error
            }
        }
    }

    /// Opens a connection to `url`; see ``connect(to:configuration:eventLoop:)-(String,_,_)``.
    public static func connect(
        to url: URL,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        eventLoop: WebSocketEventLoop? = nil
    ) async throws -> WebSocket {
        try await connect(to: url.absoluteString, configuration: configuration, eventLoop: eventLoop)
    }

    /// Opens a connection, runs `body` with it, and closes it when `body` returns (1000)
    /// or throws or is cancelled (1001), waiting for the closing handshake either way.
    ///
    /// ```swift
    /// let reply = try await WebSocket.withConnection(to: "ws://127.0.0.1:9001/echo") { connection in
    ///     try await connection.send(.text("hello"))
    ///     return await connection.messages.first { _ in true }
    /// }
    /// ```
    ///
    /// Inside the scope, ending a `for await` loop (or `first(where:)`) over `messages`
    /// early leaves the connection open: the scope decides how it closes.
    ///
    /// `runningOn: .eventLoop` runs `body` (when it is not isolated to an actor) on the
    /// event loop's thread, with no thread hop between a message arriving and your answer
    /// being written: the fast choice for request/response code, as long as `body` never
    /// blocks. See <doc:Performance> for the trade-off and its figures.
    public static func withConnection<Result>(
        to url: String,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        eventLoop: WebSocketEventLoop? = nil,
        runningOn executor: BodyExecutor = .default,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (WebSocket) async throws -> Result
    ) async throws -> Result {
        let eventLoop = eventLoop ?? WebSocketEventLoopGroup.shared.next()
        let preferred: (any TaskExecutor)? = executor == .eventLoop ? eventLoop : nil
        return try await withTaskExecutorPreference(preferred, isolation: isolation) {
            let connection = try await connect(to: url, configuration: configuration, eventLoop: eventLoop)
            connection.connection.machine.withLock { $0.isScoped = true }
            do {
                let result = try await body(connection)
                await connection.close(code: .normalClosure)
                return result
            } catch {
                await connection.close(code: .goingAway)
                throw error
            }
        }
    }
}
