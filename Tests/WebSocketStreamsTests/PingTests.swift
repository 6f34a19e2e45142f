import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Pings and keep-alive")
struct PingTests {
    @Test("ping returns a round-trip time")
    func ping() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            let first = try await connection.ping()
            let second = try await connection.ping()
            #expect(first > .zero && first < .seconds(1))
            #expect(second > .zero && second < .seconds(1))
            await connection.close()
            let error = await expectWebSocketError { _ = try await connection.ping() }
            #expect(error == .closed(code: .normalClosure, reason: ""))
        }
    }

    @Test("a ping carries the payload it is given; its pong is matched by that payload")
    func pingWithPayload() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            // The round trip completes only if the pong echoes these exact bytes.
            let roundTrip = try await connection.ping(payload: Array("are you there?".utf8))
            #expect(roundTrip > .zero && roundTrip < .seconds(1))
            #expect(try await connection.ping(payload: []) < .seconds(1))
            #expect(try await connection.ping() < .seconds(1))
            let error = await expectWebSocketError { _ = try await connection.ping(payload: Array(repeating: 0x61, count: 126)) }
            guard reason(of: error, ifCode: .invalidConfiguration) != nil else {
                Issue.record("expected invalidConfiguration, got \(String(describing: error))")
                return
            }
            await connection.close()
        }
    }

    @Test("a peer that never answers pings is dropped with pongTimeout")
    func pongTimeout() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = .milliseconds(100)
            configuration.pongTimeout = .milliseconds(200)
            let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            for await _ in connection.messages {}
            #expect(connection.error == .pongTimeout)
            #expect(connection.closeCode == .abnormalClosure)
        }
    }

    @Test("keep-alive pings answered by the peer keep the connection open")
    func keepAliveAnswered() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = .milliseconds(20)
            configuration.pongTimeout = .milliseconds(200)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            // Several keep-alive rounds pass while these user pings go back and forth.
            for _ in 0..<10 { _ = try await connection.ping() }
            try await connection.send(.text("alive"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("alive"))
            #expect(connection.isOpen)
            await connection.close()
        }
    }
}
