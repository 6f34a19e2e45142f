extension WebSocketConfiguration {
    /// TLS settings for `wss://` connections.
    ///
    /// By default the server's certificate must chain to a CA the system trusts and name
    /// the host being connected to. Add a private CA with ``trustedCAFile``; present a
    /// client certificate with ``clientCertificateFile`` and ``clientKeyFile``; verify
    /// another name than the URL's host with ``serverName``; pin the server's public keys
    /// with ``pinnedPublicKeys``.
    ///
    /// ```swift
    /// var configuration = WebSocketConfiguration()
    /// configuration.tls.trustedCAFile = "/etc/myapp/ca.pem"
    /// configuration.tls.pinnedPublicKeys = ["sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]
    /// ```
    public struct TLS: Sendable, Hashable {
        /// A PEM file of extra CA certificates to trust, in addition to the system's.
        public var trustedCAFile: String?

        /// A PEM client certificate to present to servers that ask for one.
        public var clientCertificateFile: String?

        /// The PEM private key of ``clientCertificateFile``.
        public var clientKeyFile: String?

        /// Accepts any server certificate: self-signed, from an unknown CA, expired, or for
        /// another host. Only for testing; it makes the connection open to interception.
        public var allowUntrustedCertificates = false

        /// The name sent in SNI and that the server's certificate must name, when it is not
        /// the URL's host: e.g. connecting to an IP address, or through a tunnel, to a server
        /// whose certificate names `api.example.org`. `nil` (the default): the URL's host.
        public var serverName: String?

        /// Public-key pins: the connection opens only if the public key of a certificate
        /// of the server's verified chain (the leaf, an intermediate or the root) is one of
        /// them. Each pin is `sha256/` and the base64 SHA-256 of the certificate's DER
        /// SubjectPublicKeyInfo, the form OkHttp and curl (`--pinnedpubkey`) use, e.g.
        /// from `openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der
        /// | openssl dgst -sha256 -binary | base64`. Pin a key you hold a backup of, not only
        /// the current leaf. Empty (the default): no pinning.
        ///
        /// A mismatch fails the connection with ``WebSocketError/tlsFailure(_:)`` naming the
        /// keys the server presented. A resumed TLS session is not checked again: only a
        /// session whose full handshake passed the pins is offered for resumption.
        public var pinnedPublicKeys: [String] = []

        /// Verification on, system CAs, no client certificate.
        public init() {}
    }
}
