/// What a ``WebSocketTLSVerifier`` sees of the server: its certificates and the names
/// involved.
public struct WebSocketTLSPeer: Sendable {
    /// The URL's host.
    public var host: String

    /// The name sent in SNI and verified: ``WebSocketConfiguration/TLS/serverName``, else ``host``.
    public var serverName: String

    /// The DER encoding of each certificate, leaf first: the chain OpenSSL verified, or the
    /// chain the server sent when verification is off
    /// (``WebSocketConfiguration/TLS/allowUntrustedCertificates``) or the session was resumed.
    public var certificates: [[UInt8]]

    /// The `sha256/BASE64` pin of each certificate's public key, in the same order (the form
    /// ``WebSocketConfiguration/TLS/pinnedPublicKeys`` takes).
    public var publicKeyPins: [String]

    /// Whether OpenSSL verified the chain and the name (verification was on).
    public var isVerified: Bool

    /// Whether the TLS session was resumed (an abbreviated handshake, without certificates
    /// exchanged: ``certificates`` are those of the session's first handshake, when kept).
    public var isSessionResumed: Bool
}
