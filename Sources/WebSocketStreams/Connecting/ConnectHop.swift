import FoundationEssentials
import WebSocketCore

/// One hop of a `connect`: resolve the host (or the proxy's), race its addresses, and run
/// the TCP, TLS and HTTP upgrade steps on the loop. ``WebSocket/connect(to:configuration:eventLoop:)-(String,_,_)``
/// makes one per call, and every redirect followed reuses it: the hops share the loop, the
/// start, the one deadline of ``WebSocketConfiguration/connectTimeout`` and the metrics.
struct ConnectHop {
    let eventLoop: WebSocketEventLoop
    let startedAt: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    let metrics: ConnectionMetrics?

    /// Connects to `parsed` once: resolves, races its addresses, and runs the handshake.
    func open(_ parsed: WebSocketURL, configuration: WebSocketConfiguration, redirects: Int) async throws -> WebSocket {
        var timings = WebSocketConnectTimings()
        timings.redirects = redirects
        var target: ConnectTarget
        if let path = parsed.unixSocketPath {
            target = ConnectTarget(endpoint: .unix(path: path))
        } else if let proxy = try Self.proxyAddress(for: parsed, configuration.proxy) {
            // The socket goes to the proxy; an HTTP or socks5h proxy resolves the server's name.
            target = ConnectTarget(
                endpoint: try await Self.endpoint(proxy.host, port: proxy.port, configuration, by: deadline, timings: &timings),
                proxy: proxy)
            if case .socks5(let resolvesNames) = proxy.kind {
                if resolvesNames, !HostResolver.isNumericAddress(parsed.host) {
                    target.socksDestination = .hostName(parsed.host)
                } else {
                    let address = try await Self.resolve(parsed.host, configuration, by: deadline)
                    target.socksDestination = SocketConnector.addressBytes(address).map { .address($0) } ?? .hostName(address)
                }
            }
        } else {
            target = ConnectTarget(
                endpoint: try await Self.endpoint(parsed.host, port: parsed.port, configuration, by: deadline, timings: &timings))
        }
        if parsed.isSecure {
            // Building a TLS context can take a few hundred milliseconds (the system CAs):
            // done here, once per TLS setting, never on the event loop's thread.
            target.tlsContext = try TLSClientContext.shared(for: configuration.tls)
        }
        let connection = ClientConnection(
            url: parsed, configuration: configuration, eventLoop: eventLoop,
            target: target, timings: ConnectClock(timings: timings, startedAt: startedAt),
            handshakeDeadline: deadline, metrics: metrics)
        try await connection.connect()
        return WebSocket(connection: connection)
    }

    /// The proxy `configuration` names for `url`, if any.
    private static func proxyAddress(for url: WebSocketURL, _ proxy: WebSocketProxy?) throws(WebSocketError) -> ProxyAddress? {
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
    private static func addresses(
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
    private static func resolve(
        _ host: String, _ configuration: WebSocketConfiguration, by deadline: ContinuousClock.Instant
    ) async throws -> String {
        let all = try await Self.addresses(of: host, configuration, by: deadline)
        return all.first { !$0.contains(":") } ?? all[0]
    }

    /// Where the socket for `host` goes: its one address, or, when it has several, the socket
    /// the address race connected first (``AddressRace``). Only addresses of
    /// ``WebSocketConfiguration/localAddress``'s family are tried when it is set. Notes the name
    /// resolution's time and, after a race, the TCP connect's, in `timings`.
    private static func endpoint(
        _ host: String, port: Int, _ configuration: WebSocketConfiguration, by deadline: ContinuousClock.Instant,
        timings: inout WebSocketConnectTimings
    ) async throws -> SocketConnector.Endpoint {
        let resolving = ContinuousClock.now
        var all = try await Self.addresses(of: host, configuration, by: deadline)
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
