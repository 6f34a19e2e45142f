import CLibWebSockets
import FoundationEssentials

/// The cryptography the protocol needs, from OpenSSL's libcrypto: SHA-1 for
/// `Sec-WebSocket-Accept` and random bytes for handshake keys and masking keys.
/// Nothing here is hand-rolled.
enum Crypto {
    /// The SHA-1 digest (20 bytes) of `bytes`.
    static func sha1(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, with: EVP_sha1(), named: "SHA-1")
    }

    /// The SHA-256 digest (32 bytes) of `bytes`.
    static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, with: EVP_sha256(), named: "SHA-256")
    }

    /// `bytes` digested with `algorithm` by libcrypto.
    private static func digest(_ bytes: some Collection<UInt8>, with algorithm: OpaquePointer?, named name: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let input = Array(bytes)
        let ok = input.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            }
        }
        precondition(ok == 1, "libcrypto could not compute \(name)")
        return Array(digest.prefix(Int(length)))
    }

    /// The `sha256/BASE64` pin of a DER SubjectPublicKeyInfo, as OkHttp and curl write them.
    static func publicKeyPin(ofSubjectPublicKeyInfo der: UnsafeBufferPointer<UInt8>) -> String {
        "sha256/" + Data(sha256(der)).base64EncodedString()
    }

    /// Fills `buffer` with bytes from OpenSSL's CSPRNG.
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        let ok = RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count))
        precondition(ok == 1, "OpenSSL's random generator failed")
    }

    /// `count` bytes from OpenSSL's CSPRNG.
    static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { fillRandom($0) }
        return bytes
    }
}
