import FoundationEssentials
import Testing
@testable import LibWebSocketsLoop
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("Teardown: ending the stream or dropping the connection closes it with 1001")
struct TeardownTests {
    @Test("breaking out of for-await sends 1001 and frees the connection")
    func breakSendsGoingAway() async throws {
        let loop = WebSocketEventLoop(name: "teardown-break")
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/push?count=1000&size=64"), eventLoop: loop)
            var received = 0
            for await _ in connection.messages {
                received += 1
                if received == 3 { break }
            }
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.goingAway])
            #expect(received == 3)
            await eventually("the loop lets go of every connection (WSI_DESTROY)") { await loop.liveConnectionCount() == 0 }
            #expect(connection.closeCode == .goingAway)
        }
        await loop.shutdown()
    }

    @Test("withConnection closes with 1000 when its body returns, whatever it read; 1001 when it throws",
          arguments: ["first(where:)", "break", "iterator"])
    func scopedConnectionClosesNormally(reading: String) async throws {
        try await withTestServer { server in
            let reply = try await WebSocket.withConnection(to: server.url(path: "/echo")) { connection in
                try await connection.send(.text("one"))
                switch reading {
                case "first(where:)":
                    return await connection.messages.first { _ in true }
                case "break":
                    for await message in connection.messages { return message }
                    return nil
                default:
                    var messages = connection.messages.makeAsyncIterator()
                    return await messages.next()
                }
            }
            #expect(reply == .text("one"))
            struct Failure: Error {}
            await #expect(throws: Failure.self) {
                try await WebSocket.withConnection(to: server.url(path: "/echo")) { connection in
                    try await connection.send(.text("two"))
                    _ = await connection.messages.first { _ in true }
                    throw Failure()
                }
            }
            let seen = try await server.waitUntil { $0.closeCodes.count == 2 }
            #expect(seen.closeCodes == [.normalClosure, .goingAway])
        }
    }

    @Test("withConnection(runningOn: .eventLoop) runs its body on the loop's thread; .default does not")
    func scopedConnectionOnTheLoop() async throws {
        let loop = WebSocketEventLoop(name: "scoped-on-loop")
        try await withTestServer { server in
            for executor in [WebSocket.BodyExecutor.eventLoop, .default] {
                let (onLoop, replies) = try await WebSocket.withConnection(
                    to: server.url(path: "/echo"), eventLoop: loop, runningOn: executor
                ) { connection in
                    var onLoop = loop.thread.isCurrent
                    var replies: [WebSocketMessage] = []
                    var messages = connection.messages.makeAsyncIterator()
                    for index in 0..<3 {
                        try await connection.send(.text("\(index)"))
                        if let reply = await messages.next() { replies.append(reply) }
                        onLoop = onLoop && loop.thread.isCurrent
                    }
                    return (onLoop, replies)
                }
                #expect(onLoop == (executor == .eventLoop), "\(executor)")
                #expect(replies == [.text("0"), .text("1"), .text("2")])
            }
            let seen = try await server.waitUntil { $0.closeCodes.count == 2 }
            #expect(seen.closeCodes == [.normalClosure, .normalClosure])
        }
        await loop.shutdown()
    }

    @Test("closing while reading is paused behind a full buffer still reads the peer's answer at once")
    func closeWhilePaused() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedMessages = 2
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=5000&size=64"), configuration: configuration)
            // Nobody reads: the buffer fills and reading pauses.
            await eventually("reading pauses") { connection.inboundPeakBytes >= 2 * 64 }
            let started = ContinuousClock.now
            await connection.close(code: .goingAway)
            // Well under the 10 s close timeout: the close answer was read past the full buffer.
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(connection.closeCode == .goingAway)
            #expect(connection.error == nil)
        }
    }

    @Test("cancelling the task that iterates sends 1001")
    func cancellationSendsGoingAway() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            let (started, startedContinuation) = AsyncStream<Void>.makeStream()
            let reader = Task {
                var count = 0
                for await _ in connection.messages {
                    count += 1
                    startedContinuation.yield()
                }
                return count
            }
            try await connection.send(.text("one"))
            var iterator = started.makeAsyncIterator()
            _ = await iterator.next()
            reader.cancel()
            #expect(await reader.value == 1)
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.goingAway])
        }
    }

    @Test("a connection released without being iterated or closed is closed with 1001")
    func releasedConnectionCloses() async throws {
        let loop = WebSocketEventLoop(name: "teardown-release")
        try await withTestServer { server in
            do {
                let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
                try await connection.send(.text("fire and forget"))
            }
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.goingAway])
            #expect(seen.connections.first?.messagesReceived == 1)
            await eventually("the loop lets go of every connection (WSI_DESTROY)") { await loop.liveConnectionCount() == 0 }
        }
        await loop.shutdown()
    }

    @Test("a stream that is never iterated does not close the connection")
    func unusedStreamDoesNothing() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            _ = connection.messages
            try await connection.send(.text("still open"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("still open"))
            #expect(connection.isOpen)
            await connection.close()
        }
    }

    @Test("shutting down a loop closes its connections with 1001 and refuses new ones")
    func loopShutdown() async throws {
        let loop = WebSocketEventLoop(name: "teardown-shutdown")
        try await withTestServer { server in
            let first = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            let second = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            await loop.shutdown()
            let seen = try await server.waitUntil { $0.closeCodes.count == 2 }
            #expect(seen.closeCodes == [.goingAway, .goingAway])
            #expect(first.closeCode == .goingAway)
            #expect(second.closeCode == .goingAway)
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            }
            guard reason(of: error, ifCode: .connectionFailed) != nil else {
                Issue.record("expected connectionFailed, got \(String(describing: error))")
                return
            }
        }
    }
}

