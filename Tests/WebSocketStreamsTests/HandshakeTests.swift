import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("What the handshake negotiates: compression, headers, subprotocols, proxy")
struct HandshakeTests {
    @Test("permessage-deflate is negotiated and a 1 MiB compressible message round-trips")
    func compression() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(connection.extensions?.contains("permessage-deflate") == true)
            let seen = try await server.waitUntil { $0.connections.count == 1 }
            #expect(seen.connections[0].compressed)
            let text = String(repeating: "compress me please ", count: 1_048_576 / 19 + 1)
            try await connection.send(.text(text))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text(text))
            await connection.close()
        }
    }

    @Test("compression off: nothing is negotiated")
    func noCompression() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            #expect(connection.extensions == nil)
            let seen = try await server.waitUntil { $0.connections.count == 1 }
            #expect(!seen.connections[0].compressed)
            await connection.close()
        }
    }

    @Test("custom headers, origin and the subprotocol reach the server")
    func headersAndSubprotocol() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.headers = ["X-Api-Key": "secret-key", "Authorization": "Bearer token-1", "X-Custom-Thing": "a, b"]
            configuration.subprotocols = ["superchat", "chat"]
            configuration.origin = "https://app.example"
            let connection = try await WebSocket.connect(
                to: server.url(path: "/headers?custom=x-custom-thing"), configuration: configuration)
            #expect(connection.subprotocol == "superchat")
            let seen = try await server.waitUntil { $0.connections.count == 1 }
            let headers = seen.connections[0].headers
            #expect(headers["x-api-key"] == "secret-key")
            #expect(headers["authorization"] == "Bearer token-1")
            #expect(headers["x-custom-thing"] == "a, b")
            #expect(headers["origin"] == "https://app.example")
            #expect(seen.connections[0].subprotocol == "superchat")
            var iterator = connection.messages.makeAsyncIterator()
            guard case .text(let json) = await iterator.next() else {
                Issue.record("expected the headers as JSON text")
                return
            }
            #expect(json.contains("\"x-api-key\":\"secret-key\""))
            await connection.close()
        }
    }

    @Test("user info in the URL becomes Basic authorization")
    func userInfo() async throws {
        try await withTestServer { server in
            let url = server.url(path: "/echo").replacingFirst("ws://", with: "ws://alice:s%40cret@")
            let connection = try await WebSocket.connect(to: url)
            let seen = try await server.waitUntil { $0.connections.count == 1 }
            #expect(seen.connections[0].headers["authorization"] == "Basic " + Data("alice:s@cret".utf8).base64EncodedString())
            await connection.close()
        }
    }

    @Test("a server that supports none of the offered subprotocols rejects the handshake")
    func unsupportedSubprotocol() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.subprotocols = ["mqtt"]
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            #expect(error != nil)
        }
    }

    @Test("a 101 with a header block that never ends fails at the 64 KiB cap, with a reason")
    func hugeHeaderBlock() async throws {
        try await withTestServer { server in
            let started = ContinuousClock.now
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/huge-headers"))
            }
            guard let reason = reason(of: error, ifCode: .connectionFailed) else {
                Issue.record("expected connectionFailed, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("exceed 65536 bytes"), "reason: \(reason)")
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test("ws:// and wss:// through an HTTP CONNECT proxy", arguments: [false, true])
    func proxy(tls: Bool) async throws {
        let proxy = try TestConnectProxy()
        defer { proxy.stop() }
        try await withTestServer(tls: tls ? .init() : nil) { server in
            var configuration = WebSocketConfiguration()
            configuration.proxy = "http://127.0.0.1:\(proxy.port)"
            configuration.tls.trustedCAFile = server.caCertificateFile
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            try await connection.send(.text("via proxy"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("via proxy"))
            await connection.close()
            #expect(proxy.connectRequests == ["CONNECT 127.0.0.1:\(server.port) HTTP/1.1"])
        }
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = firstRange(of: target) else { return self }
        return self[..<range.lowerBound] + replacement + self[range.upperBound...]
    }
}

@Suite("libwebsockets 4.1.6 workarounds")
struct LibWebSocketsWorkaroundTests {
    @Test("with permessage-deflate negotiated, an uncompressed frame and a pong with payload arrive once")
    func uncompressedFrameUnderDeflate() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/uncompressed"))
            #expect(connection.extensions == "permessage-deflate")
            var received: [WebSocketMessage] = []
            for await message in connection.messages { received.append(message) }
            #expect(received == [.text("uncompressed")])
            #expect(connection.closeCode == .normalClosure)
        }
    }
}
