import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Security defaults")
struct SecurityDefaultsTests {
    /// A compression bomb: 4 MiB of one repeated byte is about 4 KiB on the wire
    /// with permessage-deflate. The limit applies to the inflated size: the client closes
    /// with 1009 long before it has inflated it all.
    @Test("maxMessageSize applies after decompression: a small compressed frame that inflates past it closes with 1009")
    func compressionBomb() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxMessageSize = 1024 * 1024
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=1&size=4194304"), configuration: configuration)
            #expect(connection.extensions?.contains("permessage-deflate") == true)
            let messages = await drainToEnd(connection)
            #expect(messages.isEmpty)
            #expect(connection.closeCode == .messageTooBig)
            #expect(connection.error == .messageTooLarge(limit: 1024 * 1024))
            let seen = try await server.waitUntil { $0.connections.first?.closeCodeReceived != nil }
            #expect(seen.connections.first?.closeCodeReceived == .messageTooBig)
        }
    }

    @Test("TLS verification is on by default: the test server's self-made CA is not trusted")
    func verificationOnByDefault() async throws {
        try await withTestServer(tls: .init()) { server in
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"))
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(!reason.isEmpty)
        }
    }
}
