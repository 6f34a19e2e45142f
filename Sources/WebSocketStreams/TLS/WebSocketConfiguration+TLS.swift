extension WebSocketConfiguration {
    /// TLS settings for `wss://` connections.
    ///
    /// By default the server's certificate must chain to a CA the system trusts and name
    /// the host being connected to. Add a private CA with ``trustedCAFile`` (or
    /// ``trustedCAPEM``); present a client certificate with ``clientCertificateFile`` and
    /// ``clientKeyFile`` (or ``clientCertificatePEM`` and ``clientKeyPEM``, as secrets
    /// managers hand them out); verify another name than the URL's host with
    /// ``serverName``; pin the server's public keys with ``pinnedPublicKeys``; apply a
    /// policy of your own with ``verifyPeer``.
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

        /// PEM text of extra CA certificates to trust (one or more), in addition to the
        /// system's and ``trustedCAFile``'s.
        public var trustedCAPEM: String?

        /// A PEM client certificate (and its chain, after it) as text, in place of
        /// ``clientCertificateFile``.
        public var clientCertificatePEM: String?

        /// The PEM private key of ``clientCertificatePEM`` as text, in place of ``clientKeyFile``.
        public var clientKeyPEM: String?

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

        /// A check of your own, run after the TLS handshake and OpenSSL's verification
        /// (and the pins), before the upgrade request is sent: it sees the server's
        /// certificates and the names involved (``WebSocketTLSPeer``), and refuses the server
        /// by throwing. The connection then fails with ``WebSocketError/tlsFailure(_:)``
        /// carrying what it threw. `nil` (the default): no check beyond OpenSSL's.
        ///
        /// It runs on the event loop's thread, during the handshake: it must return quickly
        /// and never block.
        ///
        /// ```swift
        /// configuration.tls.verifyPeer = WebSocketTLSVerifier { peer in
        ///     guard peer.certificates.count >= 2 else { throw PolicyError.noIntermediate }
        /// }
        /// ```
        public var verifyPeer: WebSocketTLSVerifier?

        /// Verification on, system CAs, no client certificate.
        public init() {}
    }
}
