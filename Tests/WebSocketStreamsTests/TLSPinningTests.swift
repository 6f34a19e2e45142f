import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("TLS public-key pins and the server name, against a wss:// test server")
struct TLSPinningTests {
    @Test("a pin of the leaf's or the CA's key opens the connection; a resumed session keeps it open")
    func matchingPins() async throws {
        try await withTestServer(tls: .init()) { server in
            let certificates = try #require(server.certificates)
            for pin in [certificates.serverPublicKeyPin, certificates.caPublicKeyPin] {
                var configuration = WebSocketConfiguration()
                configuration.tls.trustedCAFile = server.caCertificateFile
                configuration.tls.pinnedPublicKeys = ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", pin]
                for _ in 0..<2 {
                    let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
                    try await connection.send(.text("pinned"))
                    var replies = connection.messages.makeAsyncIterator()
                    #expect(await replies.next() == .text("pinned"))
                    await connection.close()
                }
            }
            #expect(server.snapshot.connections.map(\.tlsResumed) == [false, true, false, true])
        }
    }

    @Test("no pin matching fails with tlsFailure naming pinnedPublicKeys and the keys the server has, before the upgrade")
    func mismatch() async throws {
        try await withTestServer(tls: .init()) { server in
            let certificates = try #require(server.certificates)
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            configuration.tls.pinnedPublicKeys = ["sha256/47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("pinnedPublicKeys"), "reason: \(reason)")
            #expect(reason.contains(certificates.serverPublicKeyPin) && reason.contains(certificates.caPublicKeyPin), "reason: \(reason)")
            // Which key is which: the leaf's, then the CA's.
            #expect(reason.contains("leaf \(certificates.serverPublicKeyPin)"), "reason: \(reason)")
            #expect(reason.contains("CA \(certificates.caPublicKeyPin)"), "reason: \(reason)")
            #expect(server.snapshot.connections.isEmpty, "no upgrade request reached the server")
        }
    }

    @Test("a pin that is not sha256/BASE64 of 32 bytes is an invalid configuration")
    func malformedPin() async throws {
        for pin in ["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "sha256/abc", "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA="] {
            var configuration = WebSocketConfiguration()
            configuration.tls.pinnedPublicKeys = [pin]
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: "wss://127.0.0.1:9/", configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .invalidConfiguration) else {
                Issue.record("expected invalidConfiguration for \(pin), got \(String(describing: error))")
                continue
            }
            #expect(reason.contains("pinnedPublicKeys"), "reason: \(reason)")
        }
    }

    @Test("serverName is the name the certificate must name (and SNI carries), whatever the URL's host")
    func serverName() async throws {
        try await withTestServer(tls: .init(hostnames: ["ws.example.test"])) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            // The URL's host (127.0.0.1 or localhost) is not in the certificate: refused.
            let refused = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            #expect(refused?.code == .tlsFailure)

            configuration.tls.serverName = "ws.example.test"
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            try await connection.send(.text("named"))
            var replies = connection.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("named"))
            await connection.close()

            configuration.tls.serverName = "other.example.test"
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("other.example.test"), "reason: \(reason)")
        }
    }
}

/// The text of the file at `path`.
private func text(ofFile path: String) throws -> String {
    String(decoding: try Data(contentsOf: URL(filePath: path)), as: UTF8.self)
}

@Suite("TLS material as PEM text, and a verify hook, against a wss:// test server")
struct TLSMaterialTests {
    @Test("a CA given as PEM text is trusted; without it the server is not; text without a certificate is refused")
    func trustedCAPEM() async throws {
        try await withTestServer(tls: .init()) { server in
            let certificates = try #require(server.certificates)
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAPEM = try text(ofFile: certificates.caCertificateFile)
            let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
            await connection.close()

            let untrusted = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url()) }
            #expect(untrusted?.code == .tlsFailure)

            configuration.tls.trustedCAPEM = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
            let garbage = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: configuration) }
            #expect(reason(of: garbage, ifCode: .invalidConfiguration)?.hasPrefix("tls.trustedCAPEM holds no usable certificate") == true)
        }
    }

    @Test("a client certificate and key as PEM text load; a key that is not PEM, or only half the pair, says which")
    func clientCertificatePEM() async throws {
        try await withTestServer(tls: .init()) { server in
            let certificates = try #require(server.certificates)
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = certificates.caCertificateFile
            configuration.tls.clientCertificatePEM = try text(ofFile: certificates.serverCertificateFile)
            configuration.tls.clientKeyPEM = try text(ofFile: certificates.serverKeyFile)
            let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
            await connection.close()

            configuration.tls.clientKeyPEM = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
            let badKey = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: configuration) }
            #expect(reason(of: badKey, ifCode: .tlsFailure)?.contains("tls.clientKeyPEM") == true)

            configuration.tls.clientKeyPEM = nil
            let half = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: configuration) }
            #expect(reason(of: half, ifCode: .invalidConfiguration) == "tls.clientCertificatePEM and tls.clientKeyPEM must be given together")
        }
    }

    @Test("the verify hook sees the verified chain and the names; what it throws fails the connection before the upgrade")
    func verifyHook() async throws {
        struct Refused: Error, CustomStringConvertible {
            var description: String { "not on the allow list" }
        }
        try await withTestServer(tls: .init()) { server in
            let certificates = try #require(server.certificates)
            let seen = AnnotatedMutex<[WebSocketTLSPeer]>([])
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = certificates.caCertificateFile
            configuration.tls.verifyPeer = WebSocketTLSVerifier { peer in seen.withLock { $0.append(peer) } }
            let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
            await connection.close()
            let peer = try #require(seen.withLock { $0.first })
            #expect(peer.host == "127.0.0.1")
            #expect(peer.serverName == "127.0.0.1")
            #expect(peer.isVerified)
            #expect(peer.certificates.count == 2)
            #expect(peer.publicKeyPins == [certificates.serverPublicKeyPin, certificates.caPublicKeyPin])

            configuration.tls.verifyPeer = WebSocketTLSVerifier { _ in throw Refused() }
            let refused = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: configuration) }
            #expect(reason(of: refused, ifCode: .tlsFailure) == "tls.verifyPeer refused the server (127.0.0.1): not on the allow list")
            #expect(server.snapshot.connections.count == 1)
        }
    }
}
