import CLibWebSockets
import Testing
import WebSocketTestServer
@testable import WebSocketStreams

/// The server half of an in-memory TLS connection: an OpenSSL server `SSL` over memory
/// BIOs, with the test CA's server certificate. ALPN: picks the client's first protocol.
private final class MemoryTLSServer {
    let context: OpaquePointer
    let ssl: OpaquePointer
    let readBIO: OpaquePointer
    let writeBIO: OpaquePointer

    /// A server for `certificates`; with `requireClientCertificate` the client must
    /// present a certificate signed by the test CA.
    init(certificates: TestCertificates, requireClientCertificate: Bool = false, sharing shared: OpaquePointer? = nil) throws {
        if let shared {
            SSL_CTX_up_ref(shared)
            context = shared
        } else {
            context = try #require(SSL_CTX_new(TLS_server_method()))
            try #require(SSL_CTX_use_certificate_chain_file(context, certificates.serverCertificateFile) == 1)
            try #require(SSL_CTX_use_PrivateKey_file(context, certificates.serverKeyFile, SSL_FILETYPE_PEM) == 1)
            SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, input, inputLength, _ in
                guard let input, inputLength > 0, Int(input[0]) + 1 <= Int(inputLength) else {
                    return SSL_TLSEXT_ERR_NOACK
                }
                out?.pointee = input + 1
                outLength?.pointee = input[0]
                return SSL_TLSEXT_ERR_OK
            }, nil)
            if requireClientCertificate {
                try #require(SSL_CTX_load_verify_locations(context, certificates.caCertificateFile, nil) == 1)
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            }
        }
        ssl = try #require(SSL_new(context))
        readBIO = try #require(BIO_new(BIO_s_mem()))
        writeBIO = try #require(BIO_new(BIO_s_mem()))
        _ = BIO_ctrl(readBIO, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, readBIO, writeBIO)
        SSL_set_accept_state(ssl)
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    func receive(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { BIO_write(readBIO, $0.baseAddress, Int32($0.count)) }
        precondition(written == Int32(bytes.count))
    }

    func takeAll() -> [UInt8] {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { BIO_read(writeBIO, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { return output }
            output += chunk[..<Int(count)]
        }
    }

    /// One handshake step: 1 done, 0 wants more input, -1 failed.
    func handshake() -> Int {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return 1 }
        let error = SSL_get_error(ssl, result)
        ERR_clear_error()
        return error == SSL_ERROR_WANT_READ ? 0 : -1
    }

    func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        precondition(written == Int32(bytes.count))
    }

    /// Everything decryptable from what was received so far; nil once the client sent close_notify.
    func readAvailable() -> [UInt8]? {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            ERR_clear_error()
            let count = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 {
                output += chunk[..<Int(count)]
                continue
            }
            let error = SSL_get_error(ssl, count)
            ERR_clear_error()
            return error == SSL_ERROR_ZERO_RETURN ? nil : output
        }
    }

    var presentedClientCertificate: Bool { SSL_get0_peer_certificate(ssl) != nil }
}


private extension TLSSession {
    func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receiveCiphertext($0) }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writePlaintext($0) }
    }

    /// Reads until OpenSSL wants more input; returns the bytes and the last outcome.
    func readAvailable(chunkSize: Int = 16384) -> (bytes: [UInt8], last: ReadOutcome) {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let outcome = chunk.withUnsafeMutableBytes { readPlaintext(into: $0) }
            guard case .bytes(let count) = outcome else { return (output, outcome) }
            output += chunk[..<count]
        }
    }
}

/// Runs the handshake, moving bytes between the two in memory, until both are done or
/// one fails; returns the client's last step.
private func handshake(_ client: TLSSession, _ server: MemoryTLSServer) -> TLSSession.HandshakeStep {
    for _ in 0..<20 {
        let step = client.continueHandshake()
        server.receive(client.takeAllCiphertext())
        let serverState = server.handshake()
        client.receive(server.takeAll())
        switch step {
        case .failed: return step
        case .done where serverState == 1: return step
        case .done, .wantsMoreInput:
            if serverState < 0 { return client.continueHandshake() }
        }
    }
    Issue.record("the handshake did not finish in 20 rounds")
    return .wantsMoreInput
}

private func trusting(_ certificates: TestCertificates) -> WebSocketConfiguration.TLS {
    var tls = WebSocketConfiguration.TLS()
    tls.trustedCAFile = certificates.caCertificateFile
    return tls
}

/// The failure text of a handshake expected to fail, or nil when it did not fail.
private func failureText(_ step: TLSSession.HandshakeStep) -> String? {
    guard case .failed(let error) = step else { return nil }
    return reason(of: error, ifCode: .tlsFailure)
}

private func isDone(_ step: TLSSession.HandshakeStep) -> Bool {
    if case .done = step { true } else { false }
}

@Suite("TLSSession over memory BIOs")
struct TLSSessionTests {
    @Test("handshake, ALPN and plaintext both ways, including 1 MiB")
    func plaintextBothWays() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost", "127.0.0.1", "::1"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(client, server)))
        #expect(client.negotiatedALPN == "http/1.1")
        #expect(!client.isResumed)

        #expect(client.write(Array("GET / HTTP/1.1\r\n\r\n".utf8)))
        server.receive(client.takeAllCiphertext())
        #expect(server.readAvailable() == Array("GET / HTTP/1.1\r\n\r\n".utf8))

        server.write(Array("HTTP/1.1 101 Switching Protocols\r\n\r\n".utf8))
        client.receive(server.takeAll())
        let (reply, last) = client.readAvailable()
        #expect(reply == Array("HTTP/1.1 101 Switching Protocols\r\n\r\n".utf8))
        guard case .wantsMoreInput = last else { Issue.record("expected wantsMoreInput, got \(last)"); return }

        var generator = SeededGenerator(state: 1)
        let large = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(client.write(large))
        #expect(client.pendingCiphertextCount > large.count)  // record overhead
        server.receive(client.takeAllCiphertext())
        #expect(client.pendingCiphertextCount == 0)
        #expect(server.readAvailable() == large)

        server.write(large)
        client.receive(server.takeAll())
        #expect(client.hasUnprocessedCiphertext)
        #expect(client.readAvailable(chunkSize: 10000).bytes == large)
        #expect(!client.hasUnprocessedCiphertext)
        #expect(!client.hasBufferedPlaintext)
    }

    @Test("the certificate must name the host", arguments: [
        ("localhost", true), ("127.0.0.1", true), ("::1", true),
        ("example.com", false), ("127.0.0.2", false), ("::2", false), ("sub.localhost", false),
    ])
    func nameCheck(host: String, accepted: Bool) throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost", "127.0.0.1", "::1"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: host, verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        let step = handshake(client, server)
        if accepted {
            #expect(isDone(step))
        } else {
            let text = try #require(failureText(step))
            #expect(text.hasPrefix("the server's certificate does not name \(host) (X509 error "))
            let code = TLSSession.isIPLiteral(host) ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH
            #expect(text.contains("X509 error \(code):"))
        }
    }

    @Test("without verifyHost any name is accepted, but the chain is still checked")
    func noHostCheck() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let trusted = try TLSSession(context: .shared(for: trusting(certificates)), host: "example.com", verifyHost: false)
        #expect(isDone(handshake(trusted, try MemoryTLSServer(certificates: certificates))))

        let untrusted = try TLSSession(context: .shared(for: .init()), host: "example.com", verifyHost: false)
        let text = try #require(failureText(handshake(untrusted, try MemoryTLSServer(certificates: certificates))))
        #expect(text.contains("not signed by a trusted CA"))
    }

    @Test("an unknown CA is rejected, and the server is told why")
    func unknownCA() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: .init()), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        let text = try #require(failureText(handshake(client, server)))
        #expect(text == "the server's certificate is not signed by a trusted CA (trust its CA with tls.trustedCAPEM or "
            + "tls.trustedCAFile, or add it to the system's store, or point SSL_CERT_FILE at a bundle that holds it) "
            + "(X509 error 20: unable to get local issuer certificate)")
        // The session is dead: an alert went out and nothing more can be written.
        #expect(server.handshake() == -1)
        #expect(!client.write([1, 2, 3]))
    }

    @Test("an expired certificate is rejected")
    func expired() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"], validDays: -1)
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let text = try #require(failureText(handshake(client, try MemoryTLSServer(certificates: certificates))))
        #expect(text.hasPrefix("the server's certificate has expired (X509 error 10: "))
    }

    @Test("allowUntrustedCertificates accepts an unknown CA and the wrong name")
    func allowUntrusted() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"], validDays: -1)
        defer { certificates.remove() }
        var tls = WebSocketConfiguration.TLS()
        tls.allowUntrustedCertificates = true
        let client = try TLSSession(context: .shared(for: tls), host: "example.com", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(client, server)))
        #expect(client.write([42]))
        server.receive(client.takeAllCiphertext())
        #expect(server.readAvailable() == [42])
    }

    @Test("a handshake failure other than the certificate names the host and OpenSSL's reason")
    func otherHandshakeFailure() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        #expect(client.continueHandshake().isWantsMoreInput)
        _ = client.takeAllCiphertext()
        client.receive(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))  // not TLS at all
        let text = try #require(failureText(client.continueHandshake()))
        #expect(text == "the server at localhost does not speak TLS on this port (try ws://): wrong version number")
        #expect(ERR_peek_error() == 0)  // the queue was left clean
    }

    @Test("close_notify both ways")
    func closeNotify() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(client, server)))

        server.write(Array("last words".utf8))
        _ = SSL_shutdown(server.ssl)
        client.receive(server.takeAll())
        let (bytes, last) = client.readAvailable()
        #expect(bytes == Array("last words".utf8))
        guard case .closedByPeer = last else { Issue.record("expected closedByPeer, got \(last)"); return }

        client.close()
        let closeNotify = client.takeAllCiphertext()
        #expect(closeNotify.count > 5)
        // An alert record (TLS 1.2) or an encrypted one (TLS 1.3).
        #expect(closeNotify.first == 21 || closeNotify.first == 23)
        client.close()  // once only
        #expect(client.pendingCiphertextCount == 0)
        #expect(!client.write([1]))
        server.receive(closeNotify)
        #expect(server.readAvailable() == nil)
    }

    @Test("a ticket resumes the session")
    func resumption() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let context = try TLSClientContext.shared(for: trusting(certificates))
        let first = try TLSSession(context: context, host: "localhost", verifyHost: true)
        let firstServer = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(first, firstServer)))
        #expect(first.ticket() == nil)  // TLS 1.3: the tickets are received but not yet read
        firstServer.write([7])
        first.receive(firstServer.takeAll())
        #expect(first.readAvailable().bytes == [7])
        let ticket = try #require(first.ticket())

        let second = try TLSSession(context: context, host: "localhost", verifyHost: true, resuming: ticket)
        let secondServer = try MemoryTLSServer(certificates: certificates, sharing: firstServer.context)
        #expect(isDone(handshake(second, secondServer)))
        #expect(second.isResumed)
        #expect(second.negotiatedALPN == "http/1.1")
        #expect(second.write([8]))
        secondServer.receive(second.takeAllCiphertext())
        #expect(secondServer.readAvailable() == [8])

        let fresh = try TLSSession(context: context, host: "localhost", verifyHost: true)
        #expect(isDone(handshake(fresh, try MemoryTLSServer(certificates: certificates, sharing: firstServer.context))))
        #expect(!fresh.isResumed)
    }

    @Test("a record split anywhere waits for the rest; small reads drain buffered plaintext")
    func splitRecords() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(client, server)))
        // Read the post-handshake tickets so only application records follow.
        #expect(client.readAvailable().last.isWantsMoreInput)

        let message = Array("hello, split world".utf8)
        server.write(message)
        let record = server.takeAll()
        client.receive(record)
        #expect(client.readAvailable().bytes == message)
        for split in 1..<record.count {
            server.write(message)
            let copy = server.takeAll()
            client.receive(Array(copy[..<split]))
            var buffer = [UInt8](repeating: 0, count: 64)
            let partial = buffer.withUnsafeMutableBytes { client.readPlaintext(into: $0) }
            #expect(partial.isWantsMoreInput, "split at \(split)")
            client.receive(Array(copy[split...]))
            let (bytes, last) = client.readAvailable()
            #expect(bytes == message, "split at \(split)")
            #expect(last.isWantsMoreInput)
        }

        server.write(message)
        client.receive(server.takeAll())
        #expect(client.hasUnprocessedCiphertext)
        #expect(!client.hasBufferedPlaintext)
        var small = [UInt8](repeating: 0, count: 5)
        let firstRead = small.withUnsafeMutableBytes { client.readPlaintext(into: $0) }
        guard case .bytes(5) = firstRead else { Issue.record("expected 5 bytes, got \(firstRead)"); return }
        #expect(small == Array("hello".utf8))
        #expect(!client.hasUnprocessedCiphertext)
        #expect(client.hasBufferedPlaintext)
        #expect(client.readAvailable().bytes == Array(", split world".utf8))
        #expect(!client.hasBufferedPlaintext)
    }

    @Test("the handshake works with the server's bytes arriving one at a time")
    func byteByByteHandshake() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(client.continueHandshake().isWantsMoreInput)
        server.receive(client.takeAllCiphertext())
        #expect(server.handshake() == 0)
        let flight = server.takeAll()
        #expect(flight.count > 100)
        for (index, byte) in flight.enumerated() {
            client.receive([byte])
            let step = client.continueHandshake()
            if index < flight.count - 1 {
                #expect(step.isWantsMoreInput, "byte \(index)")
                #expect(client.pendingCiphertextCount == 0, "byte \(index)")
            } else {
                #expect(isDone(step))
            }
        }
        server.receive(client.takeAllCiphertext())
        #expect(server.handshake() == 1)
    }

    @Test("randomized traffic in random chunks arrives intact")
    func randomizedTraffic() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        let client = try TLSSession(context: .shared(for: trusting(certificates)), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates)
        #expect(isDone(handshake(client, server)))
        var generator = SeededGenerator(state: 0x7115)
        var clientReceived: [UInt8] = []
        var clientExpected: [UInt8] = []
        for _ in 0..<2000 {
            let payload = (0..<Int.random(in: 0...600, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                #expect(client.write(payload))
                server.receive(client.takeAllCiphertext())
                #expect(server.readAvailable() == payload)
            } else {
                server.write(payload)
                clientExpected += payload
                var ciphertext = server.takeAll()[...]
                while !ciphertext.isEmpty {
                    let size = min(ciphertext.count, Int.random(in: 1...80, using: &generator))
                    client.receive(Array(ciphertext.prefix(size)))
                    ciphertext = ciphertext.dropFirst(size)
                    let (bytes, last) = client.readAvailable(chunkSize: Int.random(in: 1...64, using: &generator))
                    clientReceived += bytes
                    #expect(last.isWantsMoreInput)
                    #expect(client.pendingCiphertextCount == 0)
                }
            }
        }
        #expect(clientReceived == clientExpected)
    }

    @Test("a client certificate is presented when the server asks")
    func clientCertificate() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        var tls = trusting(certificates)
        tls.clientCertificateFile = certificates.serverCertificateFile  // it allows clientAuth too
        tls.clientKeyFile = certificates.serverKeyFile
        let client = try TLSSession(context: .shared(for: tls), host: "localhost", verifyHost: true)
        let server = try MemoryTLSServer(certificates: certificates, requireClientCertificate: true)
        #expect(isDone(handshake(client, server)))
        #expect(client.write([1]))
        server.receive(client.takeAllCiphertext())
        #expect(server.readAvailable() == [1])
        #expect(server.presentedClientCertificate)
    }

    @Test("unusable files fail with the path and OpenSSL's reason")
    func configurationErrors() throws {
        let certificates = try TestCertificates.generate(hostnames: ["localhost"])
        defer { certificates.remove() }
        var missingCA = WebSocketConfiguration.TLS()
        missingCA.trustedCAFile = certificates.directory + "/missing.pem"
        #expect(throws: WebSocketError.invalidConfiguration(
            "cannot load the CA file '\(certificates.directory)/missing.pem': No such file or directory")) {
            _ = try TLSClientContext.shared(for: missingCA)
        }

        var wrongKey = WebSocketConfiguration.TLS()
        wrongKey.clientCertificateFile = certificates.caCertificateFile
        wrongKey.clientKeyFile = certificates.serverKeyFile
        #expect {
            _ = try TLSClientContext.shared(for: wrongKey)
        } throws: { error in
            guard let text = reason(of: error as? WebSocketError, ifCode: .tlsFailure) else { return false }
            return text == "the client certificate or key could not be loaded: '\(certificates.serverKeyFile)': key values mismatch"
        }

        var missingCertificate = WebSocketConfiguration.TLS()
        missingCertificate.clientCertificateFile = certificates.directory + "/none.pem"
        missingCertificate.clientKeyFile = certificates.serverKeyFile
        #expect {
            _ = try TLSClientContext.shared(for: missingCertificate)
        } throws: { error in
            guard let text = reason(of: error as? WebSocketError, ifCode: .tlsFailure) else { return false }
            return text.hasPrefix("the client certificate or key could not be loaded: '\(certificates.directory)/none.pem': ")
        }
        #expect(ERR_peek_error() == 0)
    }

    @Test("an empty host or one with a NUL byte is refused")
    func unusableHosts() throws {
        var tls = WebSocketConfiguration.TLS()
        tls.allowUntrustedCertificates = true
        let context = try TLSClientContext.shared(for: tls)
        for host in ["", "example.com\u{0}.evil"] {
            #expect(throws: WebSocketError.tlsFailure("'\(host)' cannot be used as the TLS server name")) {
                _ = try TLSSession(context: context, host: host, verifyHost: true)
            }
        }
    }

    @Test("contexts are shared per TLS configuration")
    func sharedContexts() throws {
        var tls = WebSocketConfiguration.TLS()
        tls.allowUntrustedCertificates = true
        let first = try TLSClientContext.shared(for: tls)
        #expect(try TLSClientContext.shared(for: tls) === first)
        tls.trustedCAFile = "/etc/ssl/certs/ca-certificates.crt"
        if (try? TLSClientContext.shared(for: tls)) != nil {  // where that bundle exists
            #expect(try TLSClientContext.shared(for: tls) !== first)
        }
    }

    @Test("IP literals are recognised (no SNI, address check)", arguments: [
        ("127.0.0.1", true), ("::1", true), ("fe80::1", true), ("2001:db8::8:800:200c:417a", true),
        ("localhost", false), ("127.1", false), ("1.2.3.4.example", false), ("[::1]", false), ("", false),
    ])
    func ipLiterals(host: String, isLiteral: Bool) {
        #expect(TLSSession.isIPLiteral(host) == isLiteral)
    }
}

private extension TLSSession.HandshakeStep {
    var isWantsMoreInput: Bool {
        if case .wantsMoreInput = self { true } else { false }
    }
}

private extension TLSSession.ReadOutcome {
    var isWantsMoreInput: Bool {
        if case .wantsMoreInput = self { true } else { false }
    }
}
