/// Why a URL, a proxy setting or a proxy's answer stops a connection before it opens: what
/// the parsers and the SOCKS5 handshake of this module throw. WebSocketStreams reports each
/// case as the `WebSocketError` of the same name, with the same reason.
package enum ConnectFailure: Error, Sendable, Hashable {
    /// The URL cannot be connected to; the reason says why.
    case invalidURL(String)
    /// A setting (here, a proxy's address) is invalid; the reason says which and why.
    case invalidConfiguration(String)
    /// The peer (here, a proxy) does not speak the protocol expected.
    case connectionFailed(String)
    /// The proxy refused the tunnel or the credentials.
    case proxyRejected(String)
}
