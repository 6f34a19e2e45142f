import Foundation
import Synchronization
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Handlers in Swift on the test server: an app's own protocol, served over real sockets.
@Suite("TestServer handlers")
struct HandlerTests {
    /// A feed: the client subscribes, gets a snapshot and two updates; every message it sends
    /// afterwards is answered with "ack <text>".
    static let feed = TestServer.Handler { connection in
        guard case .text(let first)? = await connection.receive(), first.hasPrefix("subscribe") else {
            throw FeedError.noSubscription
        }
        try await connection.send(.text("snapshot for \(connection.headers["authorization"] ?? "nobody")"))
        try await connection.send(.text("update 1"))
        try await connection.send(.binary(Data([2])))
        for await message in connection.messages {
            guard case .text(let text) = message else { continue }
            try await connection.send(.text("ack \(text)"))
        }
    }

    enum FeedError: Error, CustomStringConvertible {
        case noSubscription
        var description: String { "the client did not subscribe first" }
    }

    @Test("two handlers: headers seen, messages both ways in order, each on its own path")
    func twoHandlers() async throws {
        let seenQuery = Mutex<[String: String]>([:])
        let handlers: [String: TestServer.Handler] = [
            "/feed": Self.feed,
            "/whoami": TestServer.Handler { connection in
                seenQuery.withLock { $0 = connection.query }
                try await connection.send(.text("\(connection.path) \(connection.headers["x-api-key"] ?? "-")"))
            },
        ]
        try await TestServer.withServer(handlers: handlers) { server in
            var configuration = WebSocketConfiguration()
            configuration.headers["Authorization"] = "Bearer t1"
            configuration.headers["X-Api-Key"] = "k-42"
            let connection = try await WebSocket.connect(to: server.url(path: "/feed?room=7"), configuration: configuration)
            var messages = connection.messages.makeAsyncIterator()
            try await connection.send(.text("subscribe prices"))
            #expect(await messages.next() == .text("snapshot for Bearer t1"))
            #expect(await messages.next() == .text("update 1"))
            #expect(await messages.next() == .binary(Data([2])))
            for index in 0..<20 { try await connection.send(.text("m\(index)")) }
            for index in 0..<20 { #expect(await messages.next() == .text("ack m\(index)")) }
            await connection.close()

            let other = try await WebSocket.connect(to: server.url(path: "/whoami?a=1&b=two"), configuration: configuration)
            var otherMessages = other.messages.makeAsyncIterator()
            #expect(await otherMessages.next() == .text("/whoami k-42"))
            // The handler returned: the server closed with 1000.
            #expect(await otherMessages.next() == nil)
            #expect(other.closeCode == .normalClosure)
            #expect(seenQuery.withLock { $0 } == ["a": "1", "b": "two"])

            let seen = try await server.waitUntil { $0.openConnections.isEmpty && $0.handshakeCount == 2 }
            #expect(seen.connections.map(\.path) == ["/feed", "/whoami"])
            #expect(seen.connections[0].headers["authorization"] == "Bearer t1")
            #expect(seen.connections[0].messagesReceived == 21)
            #expect(seen.connections[0].closeCodeReceived == .normalClosure)
            #expect(seen.connections[1].closeCodeSent == .normalClosure)
        }
    }

    @Test("the client's close ends messages and shows its code and reason")
    func clientClose() async throws {
        let closed = Mutex<(WebSocketCloseCode?, String?)>((nil, nil))
        let handler = TestServer.Handler { connection in
            for await _ in connection.messages {}
            closed.withLock { $0 = (connection.closeCode, connection.closeReason) }
        }
        try await TestServer.withServer(handlers: ["/app": handler]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/app"))
            try await connection.send(.text("hello"))
            await connection.close(code: 4001, reason: "done here")
            try await server.waitUntil { $0.openConnections.isEmpty && $0.handshakeCount == 1 }
            await eventually("the handler saw the close") { closed.withLock { $0.0 } != nil }
            #expect(closed.withLock { $0.0 } == 4001)
            #expect(closed.withLock { $0.1 } == "done here")
        }
    }

    @Test("a drop mid-stream: ReconnectingWebSocket survives and the handler runs again")
    func reconnectAfterHandlerDrop() async throws {
        let runs = Atomic<Int>(0)
        let handler = TestServer.Handler { connection in
            let run = runs.add(1, ordering: .relaxed).newValue
            try await connection.send(.text("hello \(run)"))
            if run == 1 {
                await connection.drop()
                return
            }
            for await message in connection.messages { try await connection.send(message) }
        }
        try await TestServer.withServer(handlers: ["/feed": handler]) { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            let socket = ReconnectingWebSocket(to: server.url(path: "/feed"), policy: policy)
            var messages = socket.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("hello 1"))
            #expect(await messages.next() == .text("hello 2"))
            try await socket.send(.text("after the drop"))
            #expect(await messages.next() == .text("after the drop"))
            await socket.close()
            #expect(runs.load(ordering: .relaxed) == 2)
            let seen = try await server.waitUntil { $0.handshakeCount == 2 && $0.openConnections.isEmpty }
            // The first connection ended without a close frame either way.
            #expect(seen.connections[0].closeCodeSent == nil)
            #expect(seen.connections[0].closeCodeReceived == nil)
        }
    }

    @Test("a handler that throws closes with 1011, and the snapshot keeps the error")
    func throwingHandler() async throws {
        try await TestServer.withServer(handlers: ["/feed": Self.feed]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/feed"))
            try await connection.send(.text("not a subscription"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == nil)
            #expect(connection.closeCode == .internalServerError)
            #expect(connection.ending?.closeReason == "the client did not subscribe first")
            let seen = try await server.waitUntil { $0.connections.first?.handlerError != nil }
            #expect(seen.connections[0].handlerError == "the client did not subscribe first")
            #expect(seen.connections[0].closeCodeSent == .internalServerError)
        }
    }

    @Test("an upgrade rejected with 401, headers and a body")
    func rejectedUpgrade() async throws {
        let handler = TestServer.Handler(upgrade: { request in
            request.headers["authorization"] == "Bearer good"
                ? .accept
                : .reject(status: 401, headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""], body: "{\"error\":\"expired\"}")
        }) { connection in
            try await connection.send(.text("welcome"))
        }
        try await TestServer.withServer(handlers: ["/secure": handler]) { server in
            var configuration = WebSocketConfiguration()
            configuration.headers["Authorization"] = "Bearer stale"
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/secure"), configuration: configuration)
            }
            #expect(error?.code == .handshakeRejected)
            #expect(error?.httpStatus == 401)
            #expect(error?.header(named: "www-authenticate") == "Bearer error=\"invalid_token\"")
            #expect(error?.body == Data("{\"error\":\"expired\"}".utf8))

            configuration.headers["Authorization"] = "Bearer good"
            let connection = try await WebSocket.connect(to: server.url(path: "/secure"), configuration: configuration)
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("welcome"))
            let seen = server.snapshot
            #expect(seen.rejectedHandshakes.map(\.status) == [401])
            #expect(seen.handshakeCount == 1)
        }
    }

    @Test("a path a built-in route uses, or no path at all, is refused at start")
    func builtInPathRefused() async throws {
        for path in ["/echo", "/push", "/hostile/garbage", "/", "feed", "/feed?x=1"] {
            await #expect(throws: TestServerError.self, "\(path)") {
                let server = try await TestServer.start(handlers: [path: Self.feed])
                await server.stop()
            }
        }
        do {
            _ = try await TestServer.start(handlers: ["/echo": Self.feed])
        } catch let error as TestServerError {
            #expect(error.description.contains("/echo is a built-in route"))
        }
    }

    @Test("a slow client holds the handler's send: memory stays bounded, nothing is lost")
    func slowClientHoldsSend() async throws {
        let messageSize = 256 * 1024
        let messageCount = 256   // 64 MiB in all, far more than every buffer on the way
        let sent = Atomic<Int>(0)
        let handler = TestServer.Handler { connection in
            for index in 0..<messageCount {
                var payload = Data(repeating: UInt8(truncatingIfNeeded: index), count: messageSize)
                payload[0] = UInt8(index >> 8)
                payload[1] = UInt8(index & 0xFF)
                try await connection.send(.binary(payload))
                sent.add(1, ordering: .relaxed)
            }
        }
        try await TestServer.withServer(compression: false, handlers: ["/flood": handler]) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            configuration.maxBufferedBytes = 1024 * 1024
            let connection = try await WebSocket.connect(to: server.url(path: "/flood"), configuration: configuration)
            // Wait until the handler is held: its count stops moving for 200 ms (every buffer
            // between it and the client that does not read is full).
            var last = -1
            var stillSince = ContinuousClock.now
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let now = sent.load(ordering: .relaxed)
                if now != last {
                    last = now
                    stillSince = .now
                } else if ContinuousClock.now - stillSince > .milliseconds(200) {
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            let heldAt = sent.load(ordering: .relaxed)
            // Held well short of the end: what the handler's sends handed over is at most the
            // client's 1 MiB, the kernel's socket buffers, the server's 1 MiB of queued sends
            // and the frame lws holds. (Measured in bytes handed over rather than as the
            // process's RSS, which the suite's other tests running at once make noisy.)
            let handedOver = heldAt * messageSize
            #expect(handedOver < 16 * 1024 * 1024, "the handler handed over \(handedOver) bytes (\(heldAt) of \(messageCount) messages) to a client that does not read")

            var received = 0
            for await message in connection.messages {
                guard case .binary(let data) = message else { break }
                #expect(Int(data[0]) << 8 | Int(data[1]) == received)
                received += 1
                if received == messageCount { break }
            }
            #expect(received == messageCount)
            #expect(sent.load(ordering: .relaxed) == messageCount)
        }
    }

    @Test("messages larger than the send room go out one after another, none held forever")
    func messagesLargerThanTheSendRoom() async throws {
        let handler = TestServer.Handler { connection in
            for index in 0..<40 {
                try await connection.send(.binary(Data(repeating: UInt8(index), count: 2 * 1024 * 1024)))
            }
            for await _ in connection.messages {}
        }
        try await TestServer.withServer(compression: false, handlers: ["/big": handler]) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            let connection = try await WebSocket.connect(to: server.url(path: "/big"), configuration: configuration)
            var messages = connection.messages.makeAsyncIterator()
            for index in 0..<40 {
                guard case .binary(let data)? = await messages.next() else {
                    Issue.record("message \(index) never came")
                    break
                }
                #expect(data.count == 2 * 1024 * 1024 && data.first == UInt8(index))
            }
            await connection.close()
        }
    }

    @Test("a handler that stopped reading and returns still completes the close handshake")
    func closeAfterStopReading() async throws {
        let handler = TestServer.Handler { connection in
            await connection.stopReading()
            try await connection.send(.text("bye"))
        }
        try await TestServer.withServer(handlers: ["/stops": handler]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/stops"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("bye"))
            #expect(await messages.next() == nil)
            #expect(connection.closeCode == .normalClosure)
            // The server read the client's answer to its close (reading resumed for it), so the
            // connection ended at once, not when libwebsockets gave up waiting for the answer.
            let seen = try await server.waitUntil(timeout: .seconds(2)) { $0.openConnections.isEmpty }
            #expect(seen.connections[0].closeCodeSent == .normalClosure)
        }
    }

    @Test("a handler that never reads does not stop other connections")
    func handlerThatNeverReads() async throws {
        let done = AsyncStream.makeStream(of: Void.self)
        let handlers: [String: TestServer.Handler] = [
            "/deaf": TestServer.Handler { connection in
                for await _ in done.stream { break }   // never reads; drops when the test is done
                await connection.drop()
            },
            "/echoing": TestServer.Handler { connection in
                for await message in connection.messages { try await connection.send(message) }
            },
        ]
        try await TestServer.withServer(compression: false, handlers: handlers) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            let deaf = try await WebSocket.connect(to: server.url(path: "/deaf"), configuration: configuration)
            // 8 MiB to a handler that never reads: past 4 MiB the server stops reading it.
            let chunk = Data(repeating: 7, count: 64 * 1024)
            let flood = Task { for _ in 0..<128 { try await deaf.send(.binary(chunk)) } }
            let other = try await WebSocket.connect(to: server.url(path: "/echoing"), configuration: configuration)
            var messages = other.messages.makeAsyncIterator()
            for index in 0..<10 {
                try await other.send(.text("still here \(index)"))
                #expect(await messages.next() == .text("still here \(index)"))
            }
            flood.cancel()
            await other.close()
            done.continuation.yield()
            var deafMessages = deaf.messages.makeAsyncIterator()
            #expect(await deafMessages.next() == nil)
            #expect(deaf.closeCode == .abnormalClosure)
        }
    }

    @Test("many handler connections at once")
    func manyConnections() async throws {
        let count = ProcessInfo.processInfo.environment["WEBSOCKETSTREAMS_SANITIZED"] == nil ? 1000 : 100
        let handler = TestServer.Handler { connection in
            for await message in connection.messages { try await connection.send(message) }
        }
        try await TestServer.withServer(compression: false, handlers: ["/many": handler]) { server in
            let configuration = {
                var configuration = WebSocketConfiguration()
                configuration.compression = false
                return configuration
            }()
            let echoed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let connection = try await WebSocket.connect(to: server.url(path: "/many"), configuration: configuration)
                        try await connection.send(.text("n\(index)"))
                        var messages = connection.messages.makeAsyncIterator()
                        let reply = await messages.next()
                        await connection.close()
                        return reply == .text("n\(index)")
                    }
                }
                var echoed = 0
                for try await ok in group where ok { echoed += 1 }
                return echoed
            }
            #expect(echoed == count)
            let seen = try await server.waitUntil(timeout: .seconds(20)) { $0.openConnections.isEmpty }
            #expect(seen.handshakeCount == count)
        }
    }

    @Test("stopping the server cancels a handler that waits forever, and returns")
    func stopCancelsHandlers() async throws {
        let cancelled = Atomic<Bool>(false)
        let handler = TestServer.Handler { _ in
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                cancelled.store(true, ordering: .relaxed)
                throw error
            }
        }
        let server = try await TestServer.start(handlers: ["/forever": handler])
        let connection = try await WebSocket.connect(to: server.url(path: "/forever"))
        try await server.waitUntil { $0.handshakeCount == 1 }
        await server.stop()
        let wasCancelled = cancelled.load(ordering: .relaxed)
        #expect(wasCancelled)
        var messages = connection.messages.makeAsyncIterator()
        #expect(await messages.next() == nil)
    }
}
