import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// Compression users control, the fragment limit, batches and JSON, against the test server.
@Suite("Messages: compression control, fragment limit, batches, JSON")
struct MessageControlTests {
    /// Bytes the connection has handed to its socket so far (frames, not payloads).
    private func wireBytes(_ connection: WebSocket) -> Int {
        connection.connection.writeSide.state.withLock { $0.streamBytes }
    }

    @Test("send(_:compress: false) puts the payload on the wire as it is; the default compresses it")
    func perMessageOptOut() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(connection.extensions?.contains("permessage-deflate") == true)
            let text = String(repeating: "the same words again and again. ", count: 256)  // 8 KiB
            var replies = connection.messages.makeAsyncIterator()

            let before = wireBytes(connection)
            try await connection.send(.text(text), compress: false)
            #expect(await replies.next() == .text(text))
            let uncompressed = wireBytes(connection) - before
            #expect(uncompressed >= text.utf8.count)

            let middle = wireBytes(connection)
            try await connection.send(.text(text))
            #expect(await replies.next() == .text(text))
            let compressed = wireBytes(connection) - middle
            #expect(compressed < text.utf8.count / 10)
            await connection.close()
        }
    }

    @Test("a ReconnectingWebSocket keeps send(_:compress: false) while the message waits in its queue for a connection")
    func optOutSurvivesTheQueue() async throws {
        try await withTestServer { server in
            let opened = AnnotatedMutex<WebSocket?>(nil)
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo")) { connection in
                opened.withLock { $0 = connection }
            }
            let text = String(repeating: "the same words again and again. ", count: 256)  // 8 KiB
            var replies = socket.messages.makeAsyncIterator()
            // Sent before any connection is open: it waits in the queue, options and all.
            try await socket.send(.text(text), compress: false)
            #expect(await replies.next() == .text(text))
            let connection = try #require(opened.withLock { $0 })
            #expect(connection.extensions?.contains("permessage-deflate") == true)
            let uncompressed = wireBytes(connection)
            #expect(uncompressed >= text.utf8.count, "the opted-out message went out as it is")
            try await socket.send(.text(text))
            #expect(await replies.next() == .text(text))
            #expect(wireBytes(connection) - uncompressed < text.utf8.count / 10, "the default still compresses")
            await socket.close()
        }
    }

    @Test("messages under the threshold go uncompressed; at the threshold they are compressed")
    func threshold() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.compression.threshold = 4096
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            var replies = connection.messages.makeAsyncIterator()
            let small = String(repeating: "z", count: 4095)
            var mark = wireBytes(connection)
            try await connection.send(.text(small))
            #expect(await replies.next() == .text(small))
            #expect(wireBytes(connection) - mark >= 4095)
            let large = String(repeating: "z", count: 4096)
            mark = wireBytes(connection)
            try await connection.send(.text(large))
            #expect(await replies.next() == .text(large))
            #expect(wireBytes(connection) - mark < 100)
            await connection.close()
        }
    }

    @Test("no context takeover and a smaller server window: offered, granted, and messages still round-trip")
    func negotiatedParameters() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.compression.clientNoContextTakeover = true
            configuration.compression.serverNoContextTakeover = true
            configuration.compression.serverMaxWindowBits = 10
            configuration.compression.clientMaxWindowBits = 9
            let offers = Offers()
            configuration.wireEventObserver = { event in
                if event.kind == .handshakeRequestSent, let head = event.httpHead { offers.record(head) }
            }
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let offer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=9; server_max_window_bits=10; "
                + "client_no_context_takeover; server_no_context_takeover"
            let sent: String = offers.last
            let offered = sent.contains(offer)
            #expect(offered, "the request was \(sent)")
            let extensions = try #require(connection.extensions)
            #expect(extensions.contains("server_no_context_takeover"))
            // libwebsockets grants no context takeover and ignores the window asked for.
            #expect(!extensions.contains("server_max_window_bits=1"))
            var replies = connection.messages.makeAsyncIterator()
            for round in 0..<5 {
                let text = "round \(round): " + String(repeating: "compress me, forget me. ", count: 100)
                try await connection.send(.text(text))
                #expect(await replies.next() == .text(text))
            }
            // Between messages no zlib state is kept on either side.
            let kept = connection.connection.writeSide.state.withLock { $0.frames.holdsCompressorMemory }
            #expect(kept == false)
            await connection.close()
        }
    }

    @Test("the default offer: a 12-bit client window, zlib's state released between messages, every echo byte for byte across idle pauses")
    func defaultsReleaseBetweenMessages() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            let offers = Offers()
            configuration.wireEventObserver = { event in
                if event.kind == .handshakeRequestSent, let head = event.httpHead { offers.record(head) }
            }
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let sent: String = offers.last
            #expect(sent.contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=12\r\n"),
                    "the request was \(sent)")
            var replies = connection.messages.makeAsyncIterator()
            // 1 KiB texts, then texts longer than both windows (the server's is 32 KiB), then
            // 1 KiB again: each refers back into the previous ones across the pauses.
            var texts: [String] = []
            for round in 0..<4 { texts.append("{\"round\":\(round),\"fill\":\"" + String(repeating: "abcdefgh\(round % 2)", count: 100) + "\"}") }
            for round in 0..<2 { texts.append(String(repeating: "long message \(round), refers back. ", count: 1500)) }
            texts += texts.prefix(4)
            for text in texts {
                try await connection.send(.text(text))
                #expect(await replies.next() == .text(text))
                // The write went out alone: nothing of zlib's state stays, only the window.
                let kept = connection.connection.writeSide.state.withLock { $0.frames.holdsCompressorMemory }
                #expect(kept == false)
            }
            await connection.close()
        }
    }

    @Test("a server answering what RFC 7692 does not allow fails the connection with the rule it broke", arguments: [
        ("permessage-deflate; client_max_window_bits=9; client_max_window_bits=9", "duplicate parameter 'client_max_window_bits'"),
        ("permessage-deflate; client_max_window_bits=9; server_max_window_bits=10; mystery", "unknown parameter 'mystery'"),
        ("permessage-deflate; server_max_window_bits", "parameter 'server_max_window_bits' needs a value"),
        ("permessage-deflate; client_max_window_bits=16", "invalid value '16' for 'client_max_window_bits'"),
        ("x-webkit-deflate-frame", "accepted extension 'x-webkit-deflate-frame', which the client did not offer"),
    ])
    func answerBreaksTheOffer(answer: String, words: String) async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.compression.clientMaxWindowBits = 9
            configuration.compression.serverMaxWindowBits = 10
            let query = answer.addingPercentEncodingForQuery()
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/uncompressed?extensions=\(query)"), configuration: configuration)
            }
            let said = try #require(reason(of: error, ifCode: .connectionFailed))
            #expect(said.contains(words), "the reason was: \(said)")
        }
    }

    @Test("a message in more fragments than maxFragmentsPerMessage closes with 1009, saying so")
    func fragmentLimit() async throws {
        try await withTestServer(compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            configuration.maxFragmentsPerMessage = 8
            // The first message: 8 fragments of 2 bytes, allowed; the second: 9, refused.
            let fits = try await WebSocket.connect(to: server.url(path: "/push?count=1&size=16&fragment=2"), configuration: configuration)
            var received = fits.messages.makeAsyncIterator()
            #expect(await received.next()?.byteCount == 16)
            await fits.close()

            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=1&size=18&fragment=2"), configuration: configuration)
            var count = 0
            for await _ in connection.messages { count += 1 }
            #expect(count == 0)
            #expect(connection.closeCode == .messageTooBig)
            #expect(connection.error?.code == .messageTooLarge)
            #expect(connection.error?.reason == "message in more than 8 fragments (maxFragmentsPerMessage)")
            let seen = try await server.waitUntil { $0.closeCodes.count == 2 }
            #expect(seen.closeCodes.last == .messageTooBig)
        }
    }

    @Test("a client window larger than offered: the connection compresses with the one offered, and works")
    func largerClientWindowAnswered() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.compression.clientMaxWindowBits = 9
            let answer = "permessage-deflate; client_max_window_bits=15"
            let connection = try await WebSocket.connect(
                to: server.url(path: "/uncompressed?extensions=\(answer.addingPercentEncodingForQuery())"), configuration: configuration)
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("uncompressed"))
        }
    }

    @Test("messageBatches: every message, in order, in batches of what was buffered; the end finishes it")
    func batches() async throws {
        try await withTestServer(compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.compression = false
            configuration.maxBufferedMessages = 64
            let count = 5000
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=\(count)&size=16&type=binary"), configuration: configuration)
            var next = 0
            var batchCount = 0
            var largest = 0
            for await batch in connection.messageBatches {
                #expect(!batch.isEmpty)
                batchCount += 1
                largest = max(largest, batch.count)
                for message in batch {
                    guard case .binary(let data) = message else { Issue.record("expected binary"); continue }
                    let sequence = data.prefix(8).reduce(0) { $0 << 8 | Int($1) }
                    #expect(sequence == next)
                    next += 1
                }
                if next == count { break }
            }
            #expect(next == count)
            #expect(batchCount < count)  // several messages per batch
            #expect(largest <= 2 * 64)  // bounded by the buffer limits
        }
    }

    struct Trade: Codable, Equatable {
        var price: Double
        var size: Int
    }

    @Test("send(json:) and messages(decoding:) round-trip Codable values")
    func json() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            let trades = [Trade(price: 1.5, size: 2), Trade(price: 99.25, size: 7)]
            for trade in trades { try await connection.send(json: trade) }
            var decoded: [Trade] = []
            for try await trade in connection.messages(decoding: Trade.self) {
                decoded.append(trade)
                if decoded.count == trades.count { break }
            }
            #expect(decoded == trades)
        }
    }

    @Test("a message that does not decode throws undecodableMessage and closes with 1007")
    func undecodable() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(json: Trade(price: 3, size: 1))
            try await connection.send(.text(#"{"price": 4}"#))
            var decoded: [Trade] = []
            var thrown: WebSocketError?
            do {
                for try await trade in connection.messages(decoding: Trade.self) { decoded.append(trade) }
            } catch let error as WebSocketError {
                thrown = error
            }
            #expect(decoded == [Trade(price: 3, size: 1)])
            #expect(thrown?.code == .undecodableMessage)
            #expect(thrown?.reason?.contains("key 'size' not found") == true)
            #expect(thrown?.reason?.hasPrefix(#"text("{\"price\": 4}") did not decode as Trade"#) == true)
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.invalidFramePayloadData])
        }
    }
}

/// The handshake requests a connection sent, as its wire-event observer saw them.
private final class Offers: Sendable {
    private let heads = AnnotatedMutex<[String]>([])
    func record(_ head: String) { heads.withLock { $0.append(head) } }
    var last: String { heads.withLock { $0.last ?? "" } }
}

extension String {
    /// Percent-encodes everything but unreserved characters, for a query value.
    fileprivate func addingPercentEncodingForQuery() -> String {
        var result = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                result.append(Character(UnicodeScalar(byte)))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    private func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
