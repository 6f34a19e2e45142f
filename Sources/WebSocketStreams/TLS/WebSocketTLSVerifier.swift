import Synchronization

/// A check of your own on the server's TLS certificates, set as
/// ``WebSocketConfiguration/TLS/verifyPeer``: it runs once the TLS handshake and OpenSSL's
/// verification are done, and refuses the server by throwing.
///
/// ```swift
/// struct NotOurIssuer: Error, CustomStringConvertible {
///     var description: String { "the leaf was not issued by our intermediate" }
/// }
/// var configuration = WebSocketConfiguration()
/// configuration.tls.verifyPeer = WebSocketTLSVerifier { peer in
///     guard peer.certificates.count > 1, peer.publicKeyPins[1] == ourIntermediatePin else { throw NotOurIssuer() }
/// }
/// ```
///
/// Two verifiers are equal only when they are the same value (copies of one `init`).
public struct WebSocketTLSVerifier: Sendable, Hashable {
    let verify: @Sendable (WebSocketTLSPeer) throws -> Void
    private let identity: UInt64

    /// A verifier that calls `verify` for each `wss://` connection. It runs on the event
    /// loop's thread: return quickly and never block.
    public init(_ verify: @escaping @Sendable (_ peer: WebSocketTLSPeer) throws -> Void) {
        self.verify = verify
        identity = Self.identities.add(1, ordering: .relaxed).newValue
    }

    private static let identities = Atomic<UInt64>(0)

    public static func == (lhs: WebSocketTLSVerifier, rhs: WebSocketTLSVerifier) -> Bool {
        lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(identity)
    }
}
