import FoundationEssentials
import Glibc
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// Reads `connection.messages` to its end; fails the test if it has not ended after `limit`.
/// Returns the messages read.
func drainToEnd(_ connection: WebSocket, limit: Duration = .seconds(5), sourceLocation: SourceLocation = #_sourceLocation) async -> [WebSocketMessage] {
    await withTaskGroup(of: [WebSocketMessage]?.self) { group in
        group.addTask {
            var received: [WebSocketMessage] = []
            for await message in connection.messages { received.append(message) }
            return received
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next()!
        group.cancelAll()
        if first == nil {
            Issue.record("the stream did not end within \(limit)", sourceLocation: sourceLocation)
            return await group.next()! ?? []
        }
        return first!
    }
}

@Suite("Hostile peers: servers that break the protocol byte by byte")
struct HostilePeerTests {
    /// Frames libwebsockets rejects: the client fails the connection (lws drops TCP, as RFC
    /// 6455 7.1.7 allows) and reports 1002 with a typed error; the stream finishes.
    @Test("protocol violations end the stream with 1002 and a typed error", arguments: [
        "reserved-bits", "unknown-opcode", "fragmented-control", "huge-length", "long-close-reason", "garbage?seed=7",
    ])
    func protocolViolation(kind: String) async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "hostile")
            let connection = try await WebSocket.connect(to: server.url(path: "/hostile/\(kind)"), eventLoop: loop)
            let messages = await drainToEnd(connection)
            #expect(messages.isEmpty)
            #expect(connection.closeCode == .protocolError)
            guard let matched = matching(connection.error, .protocolViolation), let code = matched.closeCode else {
                Issue.record("expected a typed error, got \(String(describing: connection.error))")
                return
            }
            #expect(code == .protocolError)
            #expect(!connection.isOpen)
            await expectNoLiveConnections(loop)
            await loop.shutdown()
        }
    }

    /// Codes RFC 6455 7.4 reserves or leaves unused. (Codes from 5000 up are undefined and
    /// echoed as sent, like Autobahn's informational cases 7.13.x.)
    @Test("a close frame with a code that may not be sent is answered with 1002", arguments: [1005, 999, 1004, 1016, 2999])
    func invalidCloseCode(code: Int) async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/hostile/bad-close-code?code=\(code)"))
            _ = await drainToEnd(connection)
            #expect(connection.closeCode == .protocolError)
            let seen = try await server.waitUntil { $0.connections.first?.closeCodeReceived != nil }
            #expect(seen.connections.first?.closeCodeReceived == .protocolError)
        }
    }

    @Test("invalid UTF-8 across two fragments is answered with 1007")
    func invalidUTF8AcrossFragments() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/hostile/bad-utf8-fragments"))
            let messages = await drainToEnd(connection)
            #expect(messages.isEmpty)
            #expect(connection.closeCode == .invalidFramePayloadData)
            #expect(connection.error == .protocolViolation(closeCode: .invalidFramePayloadData, reason: "invalid UTF-8 in a text message"))
            let seen = try await server.waitUntil { $0.connections.first?.closeCodeReceived != nil }
            #expect(seen.connections.first?.closeCodeReceived == .invalidFramePayloadData)
        }
    }

    @Test("a flood of 10,000 pings is survived; the close after it is answered with 1000")
    func pingFlood() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/hostile/ping-flood?count=10000"))
            let messages = await drainToEnd(connection)
            #expect(messages.isEmpty)
            #expect(connection.closeCode == .normalClosure)
            #expect(connection.closeReason == "flood over")
            let seen = try await server.waitUntil { $0.connections.first?.closeCodeReceived != nil }
            #expect(seen.connections.first?.closeCodeReceived == .normalClosure)
            // lws keeps one pending pong per connection, so it answers a burst with a few.
            #expect((seen.connections.first?.pongsReceived ?? 0) >= 1)
        }
    }

    @Test("a handshake answer trickled a byte at a time runs into connectTimeout")
    func slowloris() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.connectTimeout = .milliseconds(800)
            let started = ContinuousClock.now
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/hostile/slowloris?ms=100"), configuration: configuration)
            }
            #expect(error?.code == .timedOut)
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    /// RFC 6455 5.1: a client must fail the connection when a server masks a frame.
    @Test("a masked server frame fails the connection with 1002")
    func maskedFrame() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/hostile/masked"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == nil)
            #expect(connection.closeCode == .protocolError)
            #expect(connection.error == .protocolViolation(closeCode: .protocolError, reason: "the server sent a masked frame"))
            let seen = try await server.waitUntil { $0.connections.first?.closeCodeReceived != nil }
            #expect(seen.connections.first?.closeCodeReceived == .protocolError)
        }
    }

    /// Seeded random frame sequences, valid and not, for a bounded time: the process must
    /// survive and every connection must end, with nothing left on the loop.
    @Test("fuzz: seeded random frame sequences never crash the client and every connection ends")
    func fuzz() async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "fuzz")
            var configuration = WebSocketConfiguration()
            // Not what is tested: generous, so a loaded machine (or TSan) cannot fail it.
            configuration.connectTimeout = .seconds(10)
            var outcomes: [WebSocketCloseCode: Int] = [:]
            for seed in 1...120 {
                let url = server.url(path: "/hostile/fuzz?seed=\(seed)&count=40")
                let connection = try await WebSocket.connect(to: url, configuration: configuration, eventLoop: loop)
                _ = await drainToEnd(connection)
                let code = try #require(connection.closeCode, "seed \(seed): the connection did not end")
                outcomes[code, default: 0] += 1
                // Its own verdict, a socket lws dropped (1006), or what the peer's close said
                // (any sendable code, or an undefined one from 5000 up).
                #expect([1002, 1006, 1007, 1009].contains(code.rawValue) || code.isValidInCloseFrame || code.rawValue >= 5000,
                        "seed \(seed): \(code)")
            }
            print("fuzz: 120 seeds, close codes \(outcomes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue): \($0.value)" })")
            await expectNoLiveConnections(loop)
            await loop.shutdown()
        }
    }

    private func expectNoLiveConnections(_ loop: WebSocketEventLoop, sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(await loop.liveConnectionCount() == 0, sourceLocation: sourceLocation)
    }
}
