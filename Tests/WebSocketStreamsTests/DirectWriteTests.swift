import FoundationEssentials
import Synchronization
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// A `send` on a pool thread that finds nothing queued writes its frame to the socket
/// itself (``DirectWriter``); everything else goes through the loop. These tests check
/// that the two paths never reorder, drop or duplicate a message, against a real server.
@Suite("Sends written on the caller's thread")
struct DirectWriteTests {
    /// A configuration for `server` (trusting its CA when it speaks TLS).
    static func configuration(for server: TestServer, compression: Bool = true) -> WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.compression = WebSocketCompression(isEnabled: compression)
        configuration.tls.trustedCAFile = server.caCertificateFile
        return configuration
    }

    @Test("request/response round trips write their frames without waking the loop (over TLS, encrypted by the sender)",
          arguments: [false, true])
    func roundTripsWriteDirectly(tls: Bool) async throws {
        try await withTestServer(tls: tls ? .init() : nil, compression: false) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: Self.configuration(for: server))
            #expect(connection.url.hasPrefix("wss://") == tls)
            // The burst rule is off (it has a test of its own): on a loaded machine a sender
            // preempted inside `send` can find the answer already there when it resumes, and its
            // next request then looks like part of a burst.
            connection.connection.writeSide.directWriteGap.store(0, ordering: .relaxed)
            // Direct writes open at the end of the loop's first pass after the handshake.
            while !connection.connection.writeSide.withLock({ $0.direct.descriptor >= 0 }) { await Task.yield() }
            var iterator = connection.messages.makeAsyncIterator()
            for index in 0..<50 {
                try await connection.send(.text("request \(index)"))
                #expect(await iterator.next() == .text("request \(index)"))
            }
            // Every send is written directly unless it met the loop mid-flush (it has just
            // read the last reply and may still be writing): then it is queued. Nothing else
            // may keep a request/response send from going directly.
            let direct = connection.connection.writeSide.withLock { $0.direct.framesWritten }
            let missed = connection.connection.writeSide.directWritesMissed.load(ordering: .relaxed)
            #expect(direct + missed == 50, "\(direct) direct, \(missed) met the loop writing")
            #expect(direct >= 1)
            #expect(connection.writtenMessageBytes == (0..<50).reduce(0) { $0 + "request \($1)".utf8.count })
            await connection.close()
        }
    }

    /// The burst rule measures from the previous send's return; on a VM the `send(2)` that wakes
    /// the peer can take most of a round trip, so an answer sent right after the reply came
    /// looked like a burst and was queued (16-44% of W1's sends). A send that answers a
    /// message its reader waited for is written directly whatever the gap.
    @Test("a send while the reader waits for the reply is written directly, however soon after the previous send")
    func answersAreNotBursts() async throws {
        try await withTestServer(compression: false) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            let core = connection.connection
            // The burst rule alone would queue every send after the first.
            core.writeSide.directWriteGap.store(1_000_000_000, ordering: .relaxed)
            while !core.writeSide.withLock({ $0.direct.descriptor >= 0 }) { await Task.yield() }
            let received = Atomic<Int>(0)
            let reader = Task {
                for await _ in connection.messages { received.add(1, ordering: .relaxed) }
            }
            let count = 20
            for index in 0..<count {
                // The reader is parked, waiting for the reply to this request.
                while core.writeSide.consumerTook.load(ordering: .relaxed) & WriteSide.ConsumerTook.afterWaiting == 0 {
                    await Task.yield()
                }
                try await connection.send(.text("request \(index)"))
                while received.load(ordering: .relaxed) <= index { await Task.yield() }
            }
            let direct = core.writeSide.withLock { $0.direct.framesWritten }
            let missed = core.writeSide.directWritesMissed.load(ordering: .relaxed)
            #expect(direct + missed == count, "\(direct) direct, \(missed) met the loop writing")
            #expect(direct >= 1)
            await connection.close()
            _ = await reader.value
        }
    }

    @Test("back-to-back sends are a burst: queued, so the loop writes them with few system calls")
    func burstsGoThroughTheQueue() async throws {
        try await withTestServer(compression: false) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            var iterator = connection.messages.makeAsyncIterator()
            let count = 200
            for index in 0..<count { try await connection.send(.text("burst \(index)")) }
            for index in 0..<count { #expect(await iterator.next() == .text("burst \(index)")) }
            let direct = connection.connection.writeSide.withLock { $0.direct.framesWritten }
            // The first send may go directly, and a sender preempted between two sends may
            // look idle once in a while; a burst written one system call per message would be 200.
            #expect(direct <= 20, "\(direct) of \(count) back-to-back sends were written directly")
            await connection.close()
        }
    }

    @Test("answers to a batch of received messages are queued, not written one system call each")
    func answersToABatchAreQueued() async throws {
        try await withTestServer(compression: false) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/push?count=400&size=64"))
            // The burst rule is off: what keeps the answers queued is that more received
            // messages wait behind each one. All 400 are buffered before the loop below takes
            // them in one batch, so none waits in the connection's own queue meanwhile.
            connection.connection.writeSide.directWriteGap.store(0, ordering: .relaxed)
            await eventually("all 400 messages are buffered") { connection.connection.machine.withLock { $0.bufferedMessageCount } >= 400 }
            var answered = 0
            for await message in connection.messages {
                guard case .binary = message else { continue }
                // The stream says whether it holds more of the batch: it does until the last.
                #expect(connection.connection.writeSide.consumerHoldsMessages.load(ordering: .relaxed) == (answered < 399))
                try await connection.send(.binary(Data(count: 16)))
                answered += 1
                if answered == 400 { break }
            }
            let direct = connection.connection.writeSide.withLock { $0.direct.framesWritten }
            #expect(answered == 400)
            #expect(direct <= 200, "\(direct) of 400 answers were written one by one")
        }
    }

    @Test("small (direct) and large (queued) messages from one task arrive in the order sent",
          arguments: [false, true], [false, true])
    func mixedSizesKeepTheirOrder(compression: Bool, tls: Bool) async throws {
        try await withTestServer(tls: tls ? .init() : nil, compression: compression) { server in
            let configuration = Self.configuration(for: server, compression: compression)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            var generator = SeededGenerator(state: compression ? 7 : 3)
            let count = 400
            var sizes: [Int] = []
            for index in 0..<count {
                // Mostly small; some above the direct limit (16 KiB), some either side of the
                // compression threshold (64 B). Each group of 10 starts small, with the queue
                // empty, so it may go directly even when compression is on.
                switch index % 10 == 0 ? 9 : generator.below(10) {
                case 0: sizes.append(DirectWriter.largestPayload + 1 + generator.below(8192))
                case 1: sizes.append(60 + generator.below(8))
                case 9: sizes.append(4 + generator.below(60))
                default: sizes.append(4 + generator.below(400))
                }
            }
            var iterator = connection.messages.makeAsyncIterator()
            var received: [Int] = []
            for group in stride(from: 0, to: count, by: 10) {
                for index in group..<group + 10 {
                    var payload = Data(repeating: UInt8(truncatingIfNeeded: index), count: sizes[index])
                    withUnsafeBytes(of: UInt32(index).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                    try await connection.send(.binary(payload))
                }
                while received.count < group + 10, let message = await iterator.next() {
                    guard case .binary(let data) = message else { continue }
                    let index = Int(data.prefix(4).withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) })
                    #expect(index < count && data.count == sizes[index], "message \(index) came back \(data.count) bytes long")
                    received.append(index)
                }
            }
            #expect(received == Array(0..<count))
            let direct = connection.connection.writeSide.withLock { $0.direct.framesWritten }
            #expect(direct > 0, "no send was written directly")
            await connection.close()
        }
    }

    @Test("a peer that stops reading: the direct write that finds the socket full hands what is left to the loop",
          arguments: [false, true])
    func socketFullHandsOverToTheLoop(tls: Bool) async throws {
        let loop = WebSocketEventLoop(name: "direct-full")
        try await withTestServer(tls: tls ? .init() : nil, compression: false) { server in
            var configuration = Self.configuration(for: server, compression: false)
            configuration.maxBufferedSendBytes = 1024 * 1024
            let connection = try await WebSocket.connect(
                to: server.url(path: "/stall"), configuration: configuration, eventLoop: loop)
            let core = connection.connection
            core.writeSide.directWriteGap.store(0, ordering: .relaxed)  // back-to-back sends may all go directly
            while !core.writeSide.withLock({ $0.direct.descriptor >= 0 }) { await Task.yield() }
            // Nothing else wakes the loop (the peer sends nothing), so every send is written
            // directly until one finds the socket full: at most 32 MiB.
            let payload = Data(repeating: 0x5A, count: 1024)
            var sent = 0
            while sent < 32 * 1024, core.writeSide.withLock({ $0.direct.partialWrites }) == 0 {
                try await connection.send(.binary(payload))
                sent += 1
            }
            let (direct, partial) = core.writeSide.withLock { ($0.direct.framesWritten, $0.direct.partialWrites) }
            #expect(partial == 1, "no direct write found the socket full in \(sent) sends")
            #expect(direct == sent)
            // What the socket did not take waits in the write side's one queue of pending
            // bytes, which only the loop sends, once the socket has room: direct writes stay
            // closed until then (the kernel may grow the socket's buffer meanwhile, and then
            // they open again, which the test after this one covers end to end).
            #expect(core.writeSide.withLock { $0.failure == nil && ($0.pending.isEmpty || $0.direct.descriptor < 0) })
            for _ in 0..<50 { try await connection.send(.binary(payload)) }
            #expect(connection.isOpen)
        }
        // The stalled peer never reads, so the close frame cannot get through: drop it.
        await loop.shutdown(gracePeriod: .zero)
    }

    @Test("a peer that stops reading for a while: direct and queued sends all arrive in order once it reads again",
          arguments: [false, true])
    func stalledPeerTakesEverythingInOrder(tls: Bool) async throws {
        try await withTestServer(tls: tls ? .init() : nil, compression: false) { server in
            var configuration = Self.configuration(for: server, compression: false)
            configuration.maxBufferedSendBytes = 256 * 1024
            // The server reads nothing for 1.5 s, long enough for the sends below to fill the
            // socket's buffers on a quiet machine (the test above checks that hand-over on its
            // own), then echoes everything.
            let connection = try await WebSocket.connect(
                to: server.url(path: "/stall?resume=1500"), configuration: configuration)
            connection.connection.writeSide.directWriteGap.store(0, ordering: .relaxed)
            let consumer = Task {
                var next = 0
                var outOfOrder = 0
                for await message in connection.messages {
                    switch message {
                    case .text:
                        return (next, outOfOrder)
                    case .binary(let data):
                        let index = Int(data.prefix(4).withUnsafeBytes { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) })
                        if index != next || data.count != 1024 { outOfOrder += 1 }
                        next = index + 1
                    }
                }
                return (next, outOfOrder)
            }
            // 1 KiB messages until a direct write finds the socket full, then 300 more (queued
            // behind what that write left); at most 32 MiB.
            var payload = Data(repeating: 0x5A, count: 1024)
            var sent = 0
            var sentAfterFull = 0
            while sent < 32 * 1024, sentAfterFull < 300 {
                withUnsafeBytes(of: UInt32(sent).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                try await connection.send(.binary(payload))
                sent += 1
                if sentAfterFull > 0 || connection.connection.writeSide.withLock({ $0.direct.partialWrites }) > 0 {
                    sentAfterFull += 1
                }
            }
            try await connection.send(.text("end"))
            let (received, outOfOrder) = await consumer.value
            #expect(received == sent)
            #expect(outOfOrder == 0)
            await connection.close()
        }
    }

    @Test("a peer that vanishes: sends fail with a typed error, never crash")
    func vanishedPeerFailsSends() async throws {
        try await withTestServer(compression: false) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/drop?after=20"))
            let error = await expectWebSocketError {
                let deadline = ContinuousClock.now + .seconds(5)
                while ContinuousClock.now < deadline {
                    try await connection.send(.text("still there?"))
                    await Task.yield()
                }
            }
            #expect(error?.code == .closed || error?.code == .connectionFailed, "\(String(describing: error))")
            for await _ in connection.messages {}
            #expect(connection.closeCode == .abnormalClosure)
            #expect(connection.error?.code == .connectionFailed)
        }
    }
}
