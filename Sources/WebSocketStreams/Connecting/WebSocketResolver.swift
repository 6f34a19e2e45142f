/// Gives a host name its addresses, in place of the system's resolver: for service
/// discovery, a fixed address book, or tests.
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.resolver = WebSocketResolver { host in
///     host == "api.internal" ? ["10.0.0.7", "10.0.0.8"] : []
/// }
/// ```
///
/// The addresses must be numeric (IPv4 dotted quads or IPv6 without brackets). When there
/// are several, they are raced as ``WebSocketConfiguration/connectionAttemptDelay`` says;
/// none is a ``WebSocketError/connectionFailed(_:)`` naming the host.
public struct WebSocketResolver: Sendable {
    let resolve: @Sendable (String) async throws -> [String]

    /// A resolver that calls `resolve` with the host name and connects to what it returns.
    public init(_ resolve: @escaping @Sendable (_ host: String) async throws -> [String]) {
        self.resolve = resolve
    }

    /// The system's resolver (`getaddrinfo`, off the event loop's thread): what a
    /// configuration without a resolver uses, and what your own can fall back to.
    public static let system = WebSocketResolver { host in try await HostResolver.resolveAll(host) }

    /// The numeric addresses of `host`, as this resolver finds them.
    public func addresses(of host: String) async throws -> [String] {
        try await resolve(host)
    }
}
