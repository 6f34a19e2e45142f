import CLibWebSockets
import Glibc

/// How TLS failures and host names read in errors, and what a peer's chain is pinned by.
extension TLSSession {
    /// The DER of the peer's certificates, leaf first: the verified chain, or the chain the
    /// peer sent when there is none. Call once the handshake is done.
    func peerCertificates() -> [[UInt8]] {
        var certificates: [[UInt8]] = []
        for index in 0..<16 {
            var der: UnsafeMutablePointer<UInt8>?
            let length = wss_peer_certificate_der(ssl, Int32(index), &der)
            guard length > 0, let der else { break }
            defer { wss_free(der) }
            certificates.append(Array(UnsafeBufferPointer(start: der, count: Int(length))))
        }
        return certificates
    }

    /// The `sha256/BASE64` pins of the public keys of the peer's certificates, leaf first:
    /// the verified chain, or the chain the peer sent when there is none. Call once the
    /// handshake is done.
    func peerPublicKeyPins() -> [String] {
        var pins: [String] = []
        for index in 0..<16 {
            var der: UnsafeMutablePointer<UInt8>?
            let length = wss_peer_public_key_der(ssl, Int32(index), &der)
            guard length > 0, let der else { break }
            defer { wss_free(der) }
            pins.append(Crypto.publicKeyPin(ofSubjectPublicKeyInfo: UnsafeBufferPointer(start: der, count: Int(length))))
        }
        return pins
    }

    /// Whether `host` is an IPv4 dotted quad or an IPv6 address (without brackets or zone).
    static func isIPLiteral(_ host: String) -> Bool {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        return inet_pton(AF_INET, host, &ipv4) == 1 || inet_pton(AF_INET6, host, &ipv6) == 1
    }


    /// A sentence for a failed certificate check, e.g. "the server's certificate has expired
    /// (X509 error 10: certificate has expired)".
    static func describeVerificationFailure(_ code: Int, host: String) -> String {
        let summary = switch Int32(truncatingIfNeeded: code) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            "the server's certificate has expired"
        case X509_V_ERR_CERT_NOT_YET_VALID:
            "the server's certificate is not valid yet"
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
             X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
            "the server's certificate is not signed by a trusted CA (trust its CA with tls.trustedCAPEM or "
                + "tls.trustedCAFile, or add it to the system's store, or point SSL_CERT_FILE at a bundle that holds it)"
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            "the server's certificate does not name \(host)"
        default:
            "the server's certificate for \(host) was rejected"
        }
        let text = X509_verify_cert_error_string(code).map { String(cString: $0) } ?? "unknown error"
        return "\(summary) (X509 error \(code): \(text))"
    }

    /// The pins of a chain (leaf first) with the role of each: `leaf sha256/…, CA sha256/…`;
    /// between them, intermediate CAs. `none` for an empty chain.
    static func describePins(_ pins: [String]) -> String {
        guard !pins.isEmpty else { return "none" }
        return pins.enumerated().map { index, pin in
            let role = index == 0 ? "leaf" : index == pins.count - 1 ? "CA" : "intermediate CA"
            return "\(role) \(pin)"
        }.joined(separator: ", ")
    }
}
