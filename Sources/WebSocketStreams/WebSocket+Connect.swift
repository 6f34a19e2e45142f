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
        let hop = HopContext(
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
        _ url: WebSocketURL, configuration: WebSocketConfiguration, hop: HopContext, span: ConnectSpan
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
        _ url: WebSocketURL, configuration: WebSocketConfiguration, hop: HopContext, redirects: inout Int
    ) async throws -> WebSocket {
        do {
            return try await openHop(url, configuration: configuration, hop: hop, redirects: 0)
        } catch let error as WebSocketError where RedirectChain.isRedirect(error, maxRedirects: configuration.maxRedirects) {
            return try await followRedirects(from: url, after: error, configuration: configuration, hop: hop, redirects: &redirects)
        }
    }

    /// Follows the redirect `error` from `start`, and each further one, as ``RedirectChain`` allows.
    private static func followRedirects(
        from start: WebSocketURL, after error: WebSocketError, configuration: WebSocketConfiguration, hop: HopContext,
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
                return try await openHop(chain.current, configuration: hopConfiguration, hop: hop, redirects: chain.redirects)
            } catch let error as WebSocketError {
                refusal = error
            }
        }
    }

    /// Connects to `parsed` once: resolves, races its addresses, and runs the handshake.
    private static func openHop(
        _ parsed: WebSocketURL, configuration: WebSocketConfiguration, hop: HopContext, redirects: Int
    ) async throws -> WebSocket {
        let deadline = hop.deadline
        var timings = WebSocketConnectTimings()
        timings.redirects = redirects
        var target: ConnectTarget
        if let path = parsed.unixSocketPath {
            target = ConnectTarget(endpoint: .unix(path: path))
        } else if let proxy = try proxyAddress(for: parsed, configuration.proxy) {
            // The socket goes to the proxy; an HTTP or socks5h proxy resolves the server's name.
            target = ConnectTarget(
                endpoint: try await endpoint(proxy.host, port: proxy.port, configuration, by: deadline, timings: &timings),
                proxy: proxy)
            if case .socks5(let resolvesNames) = proxy.kind {
                if resolvesNames, !HostResolver.isNumericAddress(parsed.host) {
                    target.socksDestination = .hostName(parsed.host)
                } else {
                    let address = try await resolve(parsed.host, configuration, by: deadline)
                    target.socksDestination = SocketConnector.addressBytes(address).map { .address($0) } ?? .hostName(address)
                }
            }
        } else {
            target = ConnectTarget(
                endpoint: try await endpoint(parsed.host, port: parsed.port, configuration, by: deadline, timings: &timings))
        }
        if parsed.isSecure {
            // Building a TLS context can take a few hundred milliseconds (the system CAs):
            // done here, once per TLS setting, never on the event loop's thread.
            target.tlsContext = try TLSClientContext.shared(for: configuration.tls)
        }
        let connection = ClientConnection(
            url: parsed, configuration: configuration, eventLoop: hop.eventLoop,
            target: target, timings: ConnectClock(timings: timings, startedAt: hop.startedAt),
            handshakeDeadline: deadline, metrics: hop.metrics)
        try await connection.connect()
        return WebSocket(connection: connection)
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

/// What every hop of one `connect` shares: the loop, when it started, its deadline, its metrics.
private struct HopContext {
    let eventLoop: WebSocketEventLoop
    let startedAt: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    let metrics: ConnectionMetrics?
}

/// The proxy `configuration` names for `url`, if any.
private func proxyAddress(for url: WebSocketURL, _ proxy: WebSocketProxy?) throws(WebSocketError) -> ProxyAddress? {
    guard url.unixSocketPath == nil, let proxy else { return nil }
    switch proxy.source {
    case .environment:
        return try ProxyEnvironment.current.proxy(for: url).map { text throws(WebSocketError) in
            try WebSocketError.reporting { () throws(ConnectFailure) in try ProxyAddress(parsing: text) }
        }
    case .url(let text):
        return try WebSocketError.reporting { () throws(ConnectFailure) in try ProxyAddress(parsing: text) }
    }
}

/// Every numeric address of `host`, from the configuration's resolver or the system's,
/// off the loop within `deadline`.
private func addresses(
    of host: String, _ configuration: WebSocketConfiguration, by deadline: ContinuousClock.Instant
) async throws -> [String] {
    if HostResolver.isNumericAddress(host) { return [host] }
    guard let resolver = configuration.resolver else {
        return try await withDeadline(deadline) { try await HostResolver.resolveAll(host) }
    }
    let found = try await withDeadline(deadline) { try await resolver.resolve(host) }
    if let bad = found.first(where: { !HostResolver.isNumericAddress($0) }) {
        throw WebSocketError.connectionFailed("the resolver gave '\(bad)' for '\(host)', which is not a numeric address")
    }
    guard !found.isEmpty else { throw WebSocketError.connectionFailed("could not resolve host '\(host)': the resolver found no address") }
    return found
}

/// One numeric address for `host` (its first IPv4 one, else its first), within `deadline`.
private func resolve(
    _ host: String, _ configuration: WebSocketConfiguration, by deadline: ContinuousClock.Instant
) async throws -> String {
    let all = try await addresses(of: host, configuration, by: deadline)
    return all.first { !$0.contains(":") } ?? all[0]
}

/// Where the socket for `host` goes: its one address, or, when it has several, the socket
/// the address race connected first (``AddressRace``). Only addresses of
/// ``WebSocketConfiguration/localAddress``'s family are tried when it is set. Notes the name
/// resolution's time and, after a race, the TCP connect's, in `timings`.
private func endpoint(
    _ host: String, port: Int, _ configuration: WebSocketConfiguration, by deadline: ContinuousClock.Instant,
    timings: inout WebSocketConnectTimings
) async throws -> SocketConnector.Endpoint {
    let resolving = ContinuousClock.now
    var all = try await addresses(of: host, configuration, by: deadline)
    if !HostResolver.isNumericAddress(host) { timings.nameResolution = .now - resolving }
    if let local = configuration.localAddress, !HostResolver.isNumericAddress(host) {
        let isIPv6 = local.contains(":")
        let reachable = all.filter { $0.contains(":") == isIPv6 }
        guard !reachable.isEmpty else {
            throw WebSocketError.connectionFailed(
                "no address of \(host) (\(all.joined(separator: ", "))) is IPv\(isIPv6 ? 6 : 4) like localAddress \(local)")
        }
        all = reachable
    }
    guard all.count > 1 else { return .tcp(address: all[0], port: port) }
    let socket = try await AddressRace.race(
        host: host, addresses: AddressRace.interleave(all), port: port, options: SocketConnector.Options(configuration),
        attemptDelay: configuration.connectionAttemptDelay, deadline: deadline)
    timings.tcpConnect = socket.connectDuration
    timings.connectionAttempts = socket.attempts
    return .connected(socket)
}

/// Runs `operation`, throwing ``WebSocketError/timedOut`` if it has not finished by `deadline`.
func withDeadline<Value: Sendable>(
    _ deadline: ContinuousClock.Instant, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(until: deadline, clock: .continuous)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw WebSocketError.timedOut }
        return value
    }
}
