import WebSocketCore

/// The proxy a connection goes through: one named by URL, or the one the environment
/// names (``environment``), as curl and most command-line tools choose it.
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.proxy = .environment                      // https_proxy, all_proxy, no_proxy, ...
/// configuration.proxy = "http://proxy.internal:3128"      // an HTTP proxy (CONNECT tunnel)
/// configuration.proxy = "socks5h://ann:s3cret@127.0.0.1:1080"
/// ```
///
/// Supported proxy URLs:
/// - `http://[user:password@]host:port`: an HTTP proxy, through a `CONNECT` tunnel
///   (credentials as Basic `Proxy-Authorization`). Without a scheme, `http://` is meant.
/// - `socks5://[user:password@]host:port`: a SOCKS5 proxy (RFC 1928; credentials with RFC
///   1929), given the server's address resolved here.
/// - `socks5h://...`: the same, but the proxy resolves the server's host name.
///
/// `ws+unix:` and `wss+unix:` connections never use a proxy.
public struct WebSocketProxy: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    enum Source: Sendable, Hashable {
        case environment
        case url(String)
    }

    let source: Source

    private init(source: Source) {
        self.source = source
    }

    /// The proxy the environment names for each connection, chosen the way curl does:
    /// `https_proxy` (then `HTTPS_PROXY`) for `wss://`, `http_proxy` for `ws://` (curl
    /// ignores upper-case `HTTP_PROXY`, which CGI servers let clients set), then
    /// `all_proxy` / `ALL_PROXY` for both. `no_proxy` (then `NO_PROXY`) lists hosts to
    /// reach directly: comma-separated names (matching the host and its subdomains, with
    /// or without a leading dot), IP literals, or `*` for every host. With none of them
    /// set, or an empty value, connections are direct. The variables are read when a
    /// connection starts.
    public static let environment = WebSocketProxy(source: .environment)

    /// A proxy given by its URL (see the type's documentation for the forms).
    public init(_ url: String) {
        source = .url(url)
    }

    /// A proxy given by its URL, written as a string literal.
    public init(stringLiteral url: String) {
        source = .url(url)
    }

    /// A proxy given by its URL, written with interpolation (e.g. a port).
    public init(stringInterpolation: DefaultStringInterpolation) {
        source = .url(String(stringInterpolation: stringInterpolation))
    }

    /// The proxy's URL as given, credentials included; `nil` for ``environment``.
    public var url: String? {
        if case .url(let url) = source { return url }
        return nil
    }

    /// `environment`, or the proxy's URL with any password replaced by `<redacted>`.
    public var description: String {
        switch source {
        case .environment: return "environment"
        case .url(let url): return ProxyAddress.redactingCredentials(url)
        }
    }
}
