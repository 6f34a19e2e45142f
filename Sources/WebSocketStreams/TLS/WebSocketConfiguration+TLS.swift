extension WebSocketConfiguration {
    /// TLS settings for `wss://` connections.
    ///
    /// By default the server's certificate must chain to a CA the system trusts and name
    /// the host being connected to. Add a private CA with ``trustedCAFile``; present a
    /// client certificate with ``clientCertificateFile`` and ``clientKeyFile``.
    ///
    /// ```swift
    /// var configuration = WebSocketConfiguration()
    /// configuration.tls.trustedCAFile = "/etc/myapp/ca.pem"
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

        /// Verification on, system CAs, no client certificate.
        public init() {}
    }
}
