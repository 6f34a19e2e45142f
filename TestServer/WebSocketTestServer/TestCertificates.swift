import CLibWebSockets
import FoundationEssentials
import Glibc

/// A throwaway certificate authority and server certificate, generated with OpenSSL
/// when a TLS ``TestServer`` starts, written as PEM files into a fresh temporary folder.
/// Nothing here is ever committed; the folder is removed when the server stops.
public struct TestCertificates: Sendable {
    /// The folder holding the files.
    public let directory: String
    /// The CA certificate clients should trust (`WebSocketConfiguration.TLS.trustedCAFile`).
    public let caCertificateFile: String
    /// The server's certificate, signed by the CA.
    public let serverCertificateFile: String
    /// The server's private key.
    public let serverKeyFile: String

    /// Generates a CA and a server certificate for `hostnames` (DNS names or IP
    /// addresses), valid from yesterday for `validDays` days; a negative `validDays`
    /// makes an already expired certificate.
    public static func generate(hostnames: [String], validDays: Int = 30) throws -> TestCertificates {
        var template = Array("/tmp/websocketstreams-tls-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw TestServerError.certificateGeneration("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: created)
        let certificates = TestCertificates(
            directory: directory,
            caCertificateFile: directory + "/ca.pem",
            serverCertificateFile: directory + "/server.pem",
            serverKeyFile: directory + "/server.key")
        try certificates.write(hostnames: hostnames, validDays: validDays)
        return certificates
    }

    private func write(hostnames: [String], validDays: Int) throws {
        guard let caKey = wss_generate_ec_key(), let serverKey = wss_generate_ec_key() else {
            throw TestServerError.certificateGeneration("key generation failed")
        }
        defer {
            EVP_PKEY_free(caKey)
            EVP_PKEY_free(serverKey)
        }
        guard let ca = wss_make_certificate(caKey, "WebSocketStreams Test CA", 1, -1, 365, 1, nil, nil, nil) else {
            throw TestServerError.certificateGeneration("could not sign the CA certificate")
        }
        defer { X509_free(ca) }
        let altNames = hostnames.map { name in
            name.contains(where: { $0.isLetter }) && !name.contains(":") ? "DNS:\(name)" : "IP:\(name)"
        }.joined(separator: ",")
        let notAfter = validDays >= 0 ? Int32(validDays) : Int32(-1)
        let notBefore: Int32 = validDays >= 0 ? -1 : Int32(validDays - 1)
        guard let leaf = wss_make_certificate(
            serverKey, hostnames.first ?? "localhost", 2, notBefore, notAfter, 0, altNames, ca, caKey)
        else {
            throw TestServerError.certificateGeneration("could not sign the server certificate")
        }
        defer { X509_free(leaf) }
        guard wss_write_certificate_pem(ca, caCertificateFile) == 1,
              wss_write_certificate_pem(leaf, serverCertificateFile) == 1,
              wss_write_private_key_pem(serverKey, serverKeyFile) == 1
        else {
            throw TestServerError.certificateGeneration("could not write PEM files to \(directory)")
        }
    }

    /// The CA's public-key pin (`sha256/BASE64`, for `WebSocketConfiguration.TLS.pinnedPublicKeys`).
    public var caPublicKeyPin: String { Self.publicKeyPin(ofCertificateFile: caCertificateFile) ?? "" }

    /// The server certificate's public-key pin.
    public var serverPublicKeyPin: String { Self.publicKeyPin(ofCertificateFile: serverCertificateFile) ?? "" }

    /// The `sha256/BASE64` pin of the public key of the first certificate in the PEM file at
    /// `path`: the base64 SHA-256 of its DER SubjectPublicKeyInfo. `nil` when it cannot be read.
    public static func publicKeyPin(ofCertificateFile path: String) -> String? {
        var der: UnsafeMutablePointer<UInt8>?
        let length = wss_certificate_file_public_key_der(path, &der)
        guard length > 0, let der else { return nil }
        defer { wss_free(der) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        guard EVP_Digest(der, Int(length), &digest, &digestLength, EVP_sha256(), nil) == 1 else { return nil }
        return "sha256/" + Data(digest.prefix(Int(digestLength))).base64EncodedString()
    }

    /// Deletes the generated files and their folder.
    public func remove() {
        for file in [caCertificateFile, serverCertificateFile, serverKeyFile] { unlink(file) }
        rmdir(directory)
    }
}
