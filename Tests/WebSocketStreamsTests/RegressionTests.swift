import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// Regressions for defects a review found; each would fail on the code before its fix.
@Suite("Regressions")
struct RegressionTests {
    @Test("large incompressible messages on many compressed connections of one loop arrive intact")
    func compressedLargeMessagesShareNoBuffer() async throws {
        let loop = WebSocketEventLoop(name: "regression-deflate")
        try await withTestServer { server in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for connectionIndex in 0..<4 {
                    group.addTask {
                        let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
                        #expect(connection.extensions?.contains("permessage-deflate") == true)
                        var generator = SplitMix(seed: UInt64(connectionIndex + 1))
                        let payloads = (0..<3).map { _ in Data((0..<300_000).map { _ in generator.nextByte() }) }
                        for payload in payloads { try await connection.send(.binary(payload)) }
                        var messages = connection.messages.makeAsyncIterator()
                        for payload in payloads {
                            let echoed = await messages.next()
                            #expect(echoed == .binary(payload), "connection \(connectionIndex) got a corrupted echo")
                        }
                        await connection.close()
                    }
                }
                try await group.waitForAll()
            }
        }
        await loop.shutdown()
    }

    @Test("with maxRedirects 0, a redirect answer is reported, not followed")
    func redirectsAreNotFollowed() async throws {
        try await withTestServer { server in
            let target = server.url(path: "/echo")
            var configuration = WebSocketConfiguration()
            configuration.maxRedirects = 0
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=302&location=\(target)"), configuration: configuration)
            }
            #expect(error?.code == .handshakeRejected)
            #expect(error?.httpStatus == 302)
            #expect(error?.body == Data("rejected by the test server".utf8))
            // It says redirects are off, and where the redirect pointed.
            #expect(error?.reason?.contains("redirects are off") == true)
            #expect(error?.reason?.hasSuffix("to \(target), and redirects are off (maxRedirects is 0; wsdump: --max-redirects)") == true)
            #expect(rejectionHeaders(error)["Location"] == target)
            #expect(server.snapshot.handshakeCount == 0)
        }
    }

    @Test("keep-alive does not drop a healthy peer while a slow consumer has paused reading")
    func noPongTimeoutUnderBackpressure() async throws {
        try await withTestServer(compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedMessages = 2
            configuration.pingInterval = .milliseconds(100)
            configuration.pongTimeout = .milliseconds(400)
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=20&size=65536"), configuration: configuration)
            var received = 0
            var messages = connection.messages.makeAsyncIterator()
            while received < 20, await messages.next() != nil {
                received += 1
                // Far longer than the pong timeout, while reading is paused (buffer full).
                if received % 10 == 1 { try await Task.sleep(for: .milliseconds(1200)) }
            }
            #expect(received == 20)
            #expect(connection.error == nil)
            #expect(connection.isOpen)
            await connection.close()
        }
    }

    @Test("messages taken for writing but never written are reported as unsent, in order")
    func unsentIncludesMessagesBeingWritten() async throws {
        try await withTestServer(compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedSendBytes = 64 * 1024 * 1024
            configuration.compression = false
            let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            let chunk = Data(repeating: 7, count: 256 * 1024)
            for index in 0..<64 {
                var payload = chunk
                payload[0] = UInt8(index)
                try await connection.send(.binary(payload))
            }
            // The loop takes messages for writing and fills the socket; the peer never reads.
            let accepted = 64 * chunk.count
            await eventually("the loop taking messages for writing") {
                connection.connection.machine.withLock { $0.queuedSendBytes } < accepted
            }
            await server.disconnectAll()
            for await _ in connection.messages {}
            let unsent = connection.unsentMessages.compactMap { message -> UInt8? in
                if case .binary(let data) = message { return data.first }
                return nil
            }
            #expect(!unsent.isEmpty)
            #expect(unsent.last == 63)
            #expect(unsent == Array((64 - unsent.count)..<64).map(UInt8.init))
        }
    }

    @Test("shutting a loop down while a handshake is under way fails connect promptly")
    func shutdownDuringHandshake() async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "regression-shutdown")
            var configuration = WebSocketConfiguration()
            configuration.connectTimeout = .seconds(30)
            let attempt = Task {
                try await WebSocket.connect(to: server.url(path: "/hang"), configuration: configuration, eventLoop: loop)
            }
            _ = try await server.waitUntil { $0.connections.count == 1 }
            let started = ContinuousClock.now
            // The connect's failure is what is timed, not the loop's own teardown after it
            // (destroying a libwebsockets context is slow under a sanitizer).
            let stopping = Task { await loop.shutdown(gracePeriod: .seconds(20)) }
            let result = await attempt.result
            let failedAfter = ContinuousClock.now - started
            await stopping.value
            guard case .failure(let failure) = result, (failure as? WebSocketError)?.code == .connectionFailed else {
                Issue.record("expected connectionFailed, got \(result)")
                return
            }
            // Not the 30 s connect timeout: the abandoned handshake ends after its 1 s grace,
            // well before the shutdown's 20 s grace period would force it. (Under
            // ThreadSanitizer with other tests running, the 1 s has taken 4.8 s: the margin
            // is for that.)
            #expect(failedAfter < .seconds(10), "connect failed after \(failedAfter)")
        }
    }
}

/// A small deterministic generator for incompressible test data.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func nextByte() -> UInt8 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return UInt8(truncatingIfNeeded: z ^ (z >> 31))
    }
}

func rejectionHeaders(_ error: WebSocketError?) -> [String: String] {
    if let matched = matching(error, .handshakeRejected), let headers = matched.headers { return headers }
    return [:]
}

@Suite("Regressions: empty messages with permessage-deflate")
struct EmptyCompressedMessageTests {
    @Test("empty messages after others on a compressed connection are sent and echoed (lws 4.1.6 aborted here)")
    func emptyMessagesAfterOthers() async throws {
        try await withTestServer(recordTexts: true) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(connection.extensions?.contains("permessage-deflate") == true)
            let outgoing: [WebSocketMessage] = [
                .text("first"), .text(""), .binary(Data([1, 2, 3])), .binary(Data()), .text(""), .text("last"),
            ]
            for message in outgoing { try await connection.send(message) }
            var received: [WebSocketMessage] = []
            var messages = connection.messages.makeAsyncIterator()
            while received.count < outgoing.count, let message = await messages.next() { received.append(message) }
            #expect(received == outgoing)
            await connection.close()
            #expect(connection.closeCode == .normalClosure)
            #expect(server.snapshot.connections.last?.textsReceived == ["first", "", "", "last"])
        }
    }
}
