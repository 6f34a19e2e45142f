import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Closing: by the peer, by TCP loss, and by this side")
struct CloseTests {
    @Test("a peer close finishes the stream with the peer's code and reason")
    func peerClose() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/close?code=4001&reason=session%20over&after=20"))
            var count = 0
            for await _ in connection.messages { count += 1 }
            #expect(count == 0)
            #expect(connection.closeCode == WebSocketCloseCode(rawValue: 4001))
            #expect(connection.closeReason == "session over")
            #expect(connection.error == nil)
            let error = await expectWebSocketError { try await connection.send(.text("late")) }
            #expect(error == .closed(code: 4001, reason: "session over"))
        }
    }

    @Test("a TCP drop without a close frame gives 1006")
    func tcpDrop() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/drop?after=20"))
            for await _ in connection.messages {}
            #expect(connection.closeCode == .abnormalClosure)
            guard let reason = reason(of: connection.error, ifCode: .connectionFailed) else {
                Issue.record("expected connectionFailed, got \(String(describing: connection.error))")
                return
            }
            #expect(reason.contains("without a close frame") || reason.contains("reset"), "reason: \(reason)")
        }
    }

    @Test("messages sent before close reach the server before the close frame")
    func closeFlushesQueue() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            for index in 0..<200 {
                try await connection.send(.binary(Data(repeating: UInt8(index % 256), count: 1024)))
            }
            await connection.close(code: .normalClosure, reason: "done")
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.connections[0].messagesReceived == 200)
            #expect(seen.connections[0].bytesReceived == 200 * 1024)
            #expect(seen.closeCodes == [.normalClosure])
            #expect(connection.closeCode == .normalClosure)
            let error = await expectWebSocketError { try await connection.send(.text("after close")) }
            #expect(error == .closed(code: .normalClosure, reason: "done"))
        }
    }

    @Test("close codes that may not be sent are replaced by 1000; long reasons are cut to 123 bytes")
    func closeArgumentsSanitised() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            await connection.close(code: .abnormalClosure, reason: String(repeating: "é", count: 100))
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.normalClosure])
            #expect(seen.connections[0].closeReasonReceived.utf8.count <= 123)
            #expect(seen.connections[0].closeReasonReceived.hasPrefix("éé"))
        }
    }

    @Test("closing twice, or after the end, returns without hanging")
    func closeIsIdempotent() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            async let first: Void = connection.close(code: 4000, reason: "a")
            async let second: Void = connection.close(code: 4001, reason: "b")
            _ = await (first, second)
            await connection.close()
            #expect(connection.closeCode == 4000 || connection.closeCode == 4001)
        }
    }

    @Test("close() right after connecting, while the server pushes 5 MB messages, finishes the close handshake cleanly")
    func closeDuringLargePush() async throws {
        try await withTestServer { server in
            // 20 MB on its way: more than the consumer's buffer (4 MiB), and nobody reads it.
            let connection = try await WebSocket.connect(to: server.url(path: "/push?count=4&size=5242880"))
            await connection.close(code: .normalClosure, reason: "enough")
            let ending = try #require(connection.ending, "close() returns once the connection has ended")
            #expect(ending.initiator == .local)
            #expect(ending.closeCode == .normalClosure, "the server answered the close: not a timeout or a drop")
            #expect(ending.error == nil)
            #expect(ending.unsentMessages.isEmpty)
            // The server saw this side's close frame with its code, in the right order.
            let seen = try await server.waitUntil { !$0.closeCodes.isEmpty }
            #expect(seen.closeCodes == [.normalClosure])
            var remaining = 0
            for await _ in connection.messages { remaining += 1 }
            #expect(remaining <= 4, "what had arrived before the close is still readable, and no more")
        }
    }

    @Test("ending says who closed: the peer, this side, or nobody (connection lost)")
    func endingSaysWhoClosed() async throws {
        try await withTestServer { server in
            let byPeer = try await WebSocket.connect(to: server.url(path: "/close?code=4001&reason=bye&after=20"))
            for await _ in byPeer.messages {}
            #expect(byPeer.ending == WebSocketEnding(
                initiator: .peer, closeCode: 4001, closeReason: "bye", error: nil, unsentMessages: []))

            let byUs = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(byUs.ending == nil, "open: no ending yet")
            await byUs.close(code: .normalClosure, reason: "done")
            #expect(byUs.ending?.initiator == .local)
            #expect(byUs.ending?.closeCode == .normalClosure)
            #expect(byUs.ending?.closeReason == "done")
            #expect(byUs.ending?.error == nil)

            let lost = try await WebSocket.connect(to: server.url(path: "/drop?after=20"))
            for await _ in lost.messages {}
            #expect(lost.ending?.initiator == .connectionLost)
            #expect(lost.ending?.closeCode == .abnormalClosure)
            #expect(lost.ending?.error?.code == .connectionFailed)

            let violated = try await WebSocket.connect(to: server.url(path: "/hostile/masked"))
            for await _ in violated.messages {}
            #expect(violated.ending?.initiator == .local, "this side failed the connection")
            #expect(violated.ending?.error?.code == .protocolViolation)
            #expect(violated.ending?.closeCode == .protocolError)
        }
    }

    @Test("a test server that goes away (TestServer's SIGTERM) closes every client with 1001, not a dropped connection")
    func serverGoesAway() async throws {
        try await withTestServer { server in
            let first = try await WebSocket.connect(to: server.url(path: "/echo"))
            let second = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(await server.goAway() == 2)
            for connection in [first, second] {
                for await _ in connection.messages {}
                #expect(connection.closeCode == .goingAway)
                #expect(connection.ending?.initiator == .peer)
                #expect(connection.error == nil)
            }
        }
    }
}

