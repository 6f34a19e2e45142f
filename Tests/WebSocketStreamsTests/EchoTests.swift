import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Echo round trips against the test server")
struct EchoTests {
    @Test("text and binary messages come back with their type")
    func textAndBinary() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.text("hello"))
            try await connection.send(.binary(Data([1, 2, 3])))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("hello"))
            #expect(await iterator.next() == .binary(Data([1, 2, 3])))
            await connection.close(code: .normalClosure, reason: "bye")
            #expect(connection.closeCode == .normalClosure)
            #expect(connection.closeReason == "bye")
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.normalClosure])
            #expect(seen.connections.first?.closeReasonReceived == "bye")
        }
    }

    /// The server gathers each message in the buffer of the echo it wrote last: a small message
    /// after a large one, and a larger one after that, must come back exactly, with nothing of
    /// the earlier message in them.
    @Test("/echo returns large, empty, small and larger messages exactly, in order, through its reused buffers",
          arguments: [false, true])
    func echoReusesBuffersWithoutLeaks(compression: Bool) async throws {
        try await withTestServer(compression: compression) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = WebSocketCompression(isEnabled: compression)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            func payload(_ count: Int, seed: UInt8) -> Data {
                Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) &+ seed })
            }
            let sent: [WebSocketMessage] = [
                .binary(payload(3 << 20, seed: 1)), .binary(Data()), .text("after a large one"),
                .binary(payload(100, seed: 2)), .binary(payload(5 << 20, seed: 3)), .text(String(repeating: "é", count: 70_000)),
            ]
            for message in sent { try await connection.send(message) }
            var iterator = connection.messages.makeAsyncIterator()
            for (index, expected) in sent.enumerated() {
                let received = await iterator.next()
                #expect(received == expected, "message \(index): \(received?.byteCount ?? -1) bytes, expected \(expected.byteCount)")
            }
            await connection.close()
        }
    }

    /// Over TLS, the route is served by the test server's raw TLS listener.
    @Test("/frame-echo (the benchmarks' echo) returns every frame: small, 2.5 MiB in fragments, pings; then the close",
          arguments: [false, true])
    func frameEcho(tls: Bool) async throws {
        try await withTestServer(tls: tls ? .init() : nil, compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            configuration.tls.trustedCAFile = server.caCertificateFile
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: configuration)
            let large = Data((0..<(5 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try await connection.send(.text("héllo"))
            try await connection.send(.binary(large))
            try await connection.send(.binary(Data()))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("héllo"))
            #expect(await iterator.next() == .binary(large))
            #expect(await iterator.next() == .binary(Data()))
            #expect(try await connection.ping() < .seconds(5))
            await connection.close(code: .normalClosure, reason: "done")
            #expect(connection.closeCode == .normalClosure)
            #expect(connection.closeReason == "done")
        }
    }

    /// The README's test-server example, as written there.
    @Test("README: TestServer.withServer in a test")
    func readmeTestServerExample() async throws {
        try await TestServer.withServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.text("hi"))
            await connection.close()
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.normalClosure])
            #expect(seen.connections[0].path == "/echo")
        }
    }
}
