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
