/// How long each phase of the opening handshake took, as curl's `-w` timings tell them
/// apart: name resolution, TCP, a proxy tunnel, TLS and the HTTP upgrade.
///
/// ```swift
/// let connection = try await WebSocket.connect(to: "wss://example.org/feed")
/// print(connection.connectTimings)
/// // dns 1.9 ms, tcp 0.4 ms (1 attempt), tls 5.2 ms, upgrade 0.9 ms, total 8.6 ms
/// ```
///
/// The fields, by the word ``description`` prints for each:
///
/// | Printed | Field | Type |
/// |---|---|---|
/// | `dns` | ``nameResolution`` | `Duration?` (`nil`: nothing to resolve) |
/// | `tcp` | ``tcpConnect`` | `Duration` |
/// | `(N attempts, ADDRESS)` | ``connectionAttempts``, ``remoteAddress`` | `Int`, `String?` |
/// | `proxy` | ``proxyTunnel`` | `Duration?` (`nil`: no proxy) |
/// | `tls` / `(resumed)` | ``tlsHandshake``, ``isTLSSessionResumed`` | `Duration?` (`nil`: `ws://`), `Bool` |
/// | `upgrade` | ``upgrade`` | `Duration` |
/// | `N redirects` | ``redirects`` | `Int` |
/// | `total` | ``total`` | `Duration` |
///
/// ```swift
/// let timings = connection.connectTimings
/// if let tls = timings.tlsHandshake, tls > .milliseconds(200) {
///     print("slow TLS to \(timings.remoteAddress ?? "?"): \(tls)")
/// }
/// ```
///
/// Each phase is the last hop's when redirects were followed; ``total`` covers them all.
/// The same figures go to swift-metrics as `websocket_client_connect_phase_duration`
/// (see <doc:Metrics>) and are printed by `wsdump -v`.
public struct WebSocketConnectTimings: Sendable, Hashable, CustomStringConvertible {
    /// Resolving the host name (the system's resolver or ``WebSocketConfiguration/resolver``);
    /// `nil` when there was nothing to resolve (a numeric host, a Unix socket).
    public var nameResolution: Duration?

    /// From the first TCP connection attempt's start to the connection that won.
    public var tcpConnect: Duration = .zero

    /// How many TCP connection attempts were started (Happy Eyeballs): 1 when the first
    /// address answered.
    public var connectionAttempts = 1

    /// The address the socket connected to, e.g. `127.0.0.1:8080` or `[::1]:443` (the
    /// proxy's, through a proxy); `nil` for a Unix socket.
    public var remoteAddress: String?

    /// The proxy's exchange: `CONNECT` and its answer, or SOCKS5's; `nil` without a proxy.
    public var proxyTunnel: Duration?

    /// The TLS handshake; `nil` for `ws://`.
    public var tlsHandshake: Duration?

    /// Whether the TLS session was resumed (an abbreviated handshake).
    public var isTLSSessionResumed = false

    /// From the upgrade request written to the server's `101` accepted.
    public var upgrade: Duration = .zero

    /// The redirects followed before the URL that opened.
    public var redirects = 0

    /// From the `connect` call to the connection open, every hop included.
    public var total: Duration = .zero

    /// No phase measured yet.
    public init() {}

    /// One line, e.g. `dns 1.9 ms, tcp 0.4 ms (1 attempt), tls 5.2 ms (resumed), upgrade 0.9 ms, total 8.6 ms`.
    public var description: String {
        var parts: [String] = []
        if let nameResolution { parts.append("dns \(Self.milliseconds(nameResolution))") }
        let attempts = connectionAttempts == 1 ? "1 attempt" : "\(connectionAttempts) attempts"
        parts.append("tcp \(Self.milliseconds(tcpConnect)) (\(attempts)\(remoteAddress.map { ", \($0)" } ?? ""))")
        if let proxyTunnel { parts.append("proxy \(Self.milliseconds(proxyTunnel))") }
        if let tlsHandshake { parts.append("tls \(Self.milliseconds(tlsHandshake))\(isTLSSessionResumed ? " (resumed)" : "")") }
        parts.append("upgrade \(Self.milliseconds(upgrade))")
        if redirects > 0 { parts.append("\(redirects) redirect\(redirects == 1 ? "" : "s")") }
        parts.append("total \(Self.milliseconds(total))")
        return parts.joined(separator: ", ")
    }

    /// `duration` in milliseconds with one decimal.
    static func milliseconds(_ duration: Duration) -> String {
        let tenths = (duration / .microseconds(100)).rounded()
        return "\(Int(tenths) / 10).\(Int(tenths) % 10) ms"
    }
}
