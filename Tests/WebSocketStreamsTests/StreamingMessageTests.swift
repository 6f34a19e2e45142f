import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// `full`, or a fifth of it under a sanitizer (`make test-tsan`, `make test-asan`), whose
/// slowdown would otherwise stretch these tests past a few seconds.
private func scaled(_ full: Int) -> Int {
    ProcessInfo.processInfo.environment["WEBSOCKETSTREAMS_SANITIZED"] == nil ? full : full / 5
}

/// Pieces of `data`, `size` bytes each (the last shorter), as an async sequence.
private func pieces(of data: Data, size: Int) -> AsyncStream<Data> {
    AsyncStream { continuation in
        var offset = 0
        while offset < data.count {
            continuation.yield(data[offset..<min(data.count, offset + size)])
            offset += size
        }
        continuation.finish()
    }
}

/// Reads every piece of `message`.
private func readAll(_ message: WebSocketIncomingMessage) async throws -> [Data] {
    var all: [Data] = []
    for try await piece in message { all.append(piece) }
    return all
}

/// A sequence of pieces that throws after its first two.
private struct FailingPieces: AsyncSequence {
    struct Broken: Error {}
    struct AsyncIterator: AsyncIteratorProtocol {
        var given = 0
        mutating func next() async throws -> Data? {
            given += 1
            if given > 2 { throw Broken() }
            return Data(repeating: UInt8(given), count: 1000)
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

@Suite("Messages in pieces: streamed in, streamed out, against the test server")
struct StreamingMessageTests {
    private func streaming(maxBufferedBytes: Int? = nil, limit: Int? = nil) -> WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.streamsIncomingMessages = true
        configuration.maxStreamedMessageSize = limit
        if let maxBufferedBytes { configuration.maxBufferedBytes = maxBufferedBytes }
        return configuration
    }

    @Test("a 3 MiB binary message sent in pieces comes back in pieces, byte for byte, three times maxMessageSize")
    func binaryRoundTrip() async throws {
        try await withTestServer { server in
            let payload = Data((0..<scaled(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            var configuration = streaming()
            configuration.maxMessageSize = payload.count / 3   // the whole-message limit does not apply
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: configuration)
            async let sent: Void = connection.send(streaming: pieces(of: payload, size: 100_000), as: .binary)
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            #expect(message.kind == .binary)
            let received = try await readAll(message)
            try await sent
            #expect(received.count > 1)
            #expect(received.reduce(into: Data()) { $0.append($1) } == payload)
            #expect(connection.isOpen)
            await connection.close()
        }
    }

    @Test("text split inside code points: every piece received decodes alone, and together they are the text")
    func textPiecesEndOnCodePoints() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            let text = String(repeating: "héllo wörld 😀 ", count: 500)
            // 7-byte pieces cut through the 2-byte and 4-byte sequences.
            async let sent: Void = connection.send(streaming: pieces(of: Data(text.utf8), size: 7), as: .text)
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            #expect(message.kind == .text)
            let received = try await readAll(message)
            try await sent
            #expect(received.count > 100)
            #expect(received.allSatisfy { String(validating: $0, as: UTF8.self) != nil })
            #expect(String(decoding: received.reduce(into: Data()) { $0.append($1) }, as: UTF8.self) == text)
            await connection.close()
        }
    }

    @Test("a slow reader holds the peer back: what waits unread stays near maxBufferedBytes, not the message's size")
    func backpressure() async throws {
        try await withTestServer { server in
            let limit = 64 * 1024
            let connection = try await WebSocket.connect(
                to: server.url(path: "/frame-echo"), configuration: streaming(maxBufferedBytes: limit))
            let payload = Data(repeating: 0x42, count: scaled(8 * 1024 * 1024))
            async let sent: Void = connection.send(streaming: pieces(of: payload, size: 32 * 1024), as: .binary)
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            var iterator = message.makeAsyncIterator()
            var total = 0
            var reads = 0
            while let piece = try await iterator.next() {
                total += piece.count
                reads += 1
                // Fall behind now and then: each pause lets the buffer fill to its limit.
                if reads % 64 == 0 { await Task.yield() }
            }
            try await sent
            #expect(total == payload.count)
            let peak = connection.connection.machine.withLock { $0.inboundPeakBytes }
            // Reading stops once the limit is reached; the read that reached it may add up to
            // one read's worth (64 KiB) beyond it.
            #expect(peak <= limit + 128 * 1024, "held \(peak) bytes unread")
            await connection.close()
        }
    }

    @Test("a reader that stops early: the rest of the message is skipped and the next message arrives")
    func earlyStop() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            let large = Data(repeating: 0x55, count: 2 * 1024 * 1024)
            try await connection.send(streaming: pieces(of: large, size: 64 * 1024), as: .binary)
            try await connection.send(.text("after"))
            var messages = connection.messageStreams.makeAsyncIterator()
            let first = try #require(await messages.next())
            var pieces = first.makeAsyncIterator()
            let piece = try await pieces.next()
            #expect(piece?.isEmpty == false)
            let second = try #require(await messages.next())   // skips the rest of the first
            #expect(second.kind == .text)
            #expect(try await readAll(second) == [Data("after".utf8)])
            // The first message's iterator ends once the reader moved on.
            #expect(try await pieces.next() == nil)
            #expect(connection.isOpen)
            await connection.close()
        }
    }

    @Test("messageStreams on a connection that does not stream: each message whole, as one piece")
    func wholeMessagesAsOnePiece() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.binary(Data([1, 2, 3])))
            try await connection.send(.text(""))
            var messages = connection.messageStreams.makeAsyncIterator()
            let binary = try #require(await messages.next())
            #expect(binary.kind == .binary)
            #expect(try await readAll(binary) == [Data([1, 2, 3])])
            let empty = try #require(await messages.next())
            #expect(empty.kind == .text)
            #expect(try await readAll(empty).isEmpty)
            await connection.close()
        }
    }

    @Test("while a message goes out in pieces, a message sent from another task waits for its end")
    func noInterleaving() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            let (source, feed) = AsyncStream.makeStream(of: Data.self)
            async let streamed: Void = connection.send(streaming: source, as: .text)
            feed.yield(Data("one ".utf8))
            feed.yield(Data("two ".utf8))
            var messages = connection.messageStreams.makeAsyncIterator()
            let first = try #require(await messages.next())
            var firstPieces = first.makeAsyncIterator()
            #expect(try await firstPieces.next() == Data("one ".utf8))   // the first piece is on the wire
            let other = Task { try await connection.send(.text("other")) }
            await eventually("the other send waits behind the stream") { connection.connection.machine.withLock { $0.sendBacklog.parkedSenders } == 1 }
            feed.yield(Data("three".utf8))
            feed.finish()
            try await streamed
            try await other.value
            var rest = Data("one ".utf8)
            while let piece = try await firstPieces.next() { rest.append(piece) }
            #expect(String(decoding: rest, as: UTF8.self) == "one two three")
            let second = try #require(await messages.next())
            #expect(try await readAll(second) == [Data("other".utf8)])
            await connection.close()
        }
    }

    @Test("each piece goes out as it comes: the peer has the first before the producer makes the second", .timeLimit(.minutes(1)))
    func piecesAreNotHeldBack() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            let (source, feed) = AsyncStream.makeStream(of: Data.self)
            async let streamed: Void = connection.send(streaming: source, as: .binary)
            feed.yield(Data([1, 2, 3]))
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            var pieces = message.makeAsyncIterator()
            #expect(try await pieces.next() == Data([1, 2, 3]))   // echoed while the stream is still open
            feed.yield(Data([4]))
            feed.finish()
            try await streamed
            #expect(try await pieces.next() == Data([4]))
            #expect(try await pieces.next() == nil)
            await connection.close()
        }
    }

    @Test("a piece sequence that throws mid-message: send throws its error and the connection closes with 1011")
    func abandonedSend() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            await #expect(throws: FailingPieces.Broken.self) {
                try await connection.send(streaming: FailingPieces(), as: .binary)
            }
            for await message in connection.messageStreams {
                _ = try? await readAll(message)
            }
            #expect(connection.closeCode == .internalServerError)
            #expect(connection.ending?.initiator == .local)
        }
    }

    @Test("text pieces that are not UTF-8: refused before anything is sent, and the connection goes on")
    func invalidTextPieces() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: streaming())
            let bad = AsyncStream<Data> { continuation in
                continuation.yield(Data([0x68, 0xFF]))
                continuation.yield(Data("fine".utf8))
                continuation.finish()
            }
            await #expect {
                try await connection.send(streaming: bad, as: .text)
            } throws: { ($0 as? WebSocketError)?.code == .invalidMessage }
            try await connection.send(.text("still open"))
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            #expect(try await readAll(message) == [Data("still open".utf8)])
            await connection.close()
        }
    }

    @Test("invalid UTF-8 split across two fragments fails with 1007; uncompressed, the valid pieces before it arrive")
    func invalidTextAcrossPieces() async throws {
        for compression in [false, true] {
            try await withTestServer(compression: compression) { server in
                let connection = try await WebSocket.connect(to: server.url(path: "/bad-utf8?split=1"), configuration: streaming())
                var received = Data()
                var failure: WebSocketError?
                for await message in connection.messageStreams {
                    do {
                        for try await piece in message { received.append(piece) }
                    } catch {
                        failure = error as? WebSocketError
                    }
                }
                #expect(connection.error?.code == .protocolViolation)
                #expect(connection.closeCode == .invalidFramePayloadData)
                if compression {
                    // Inflated in one go, the bad sequence is found before any of it is handed on.
                    #expect(Data("héllo".utf8).starts(with: received))
                } else {
                    // "héllo" went through; the 4-byte lead that the next fragment breaks did not.
                    #expect(received == Data("héllo".utf8))
                    #expect(failure?.closeCode == .invalidFramePayloadData)
                }
            }
        }
    }

    @Test("maxStreamedMessageSize: a longer message fails with 1009 once it passes the limit")
    func streamedLimit() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: "/frame-echo"), configuration: streaming(limit: 100_000))
            let payload = Data(repeating: 7, count: 300_000)
            try await connection.send(streaming: pieces(of: payload, size: 50_000), as: .binary)
            var messages = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await messages.next())
            var received = 0
            await #expect {
                for try await piece in message { received += piece.count }
            } throws: { ($0 as? WebSocketError)?.code == .messageTooLarge }
            #expect(received <= 100_000)
            #expect(connection.closeCode == .messageTooBig)
        }
    }
}
