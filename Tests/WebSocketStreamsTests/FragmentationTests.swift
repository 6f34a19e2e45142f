import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Fragmented and invalid messages")
struct FragmentationTests {
    @Test("fragmented messages arrive as one message", arguments: [
        (false, 20_000, 1), (false, 300_000, 7), (true, 300_000, 1000), (true, 300_000, 100_000),
    ])
    func fragmentsReassemble(text: Bool, size: Int, fragment: Int) async throws {
        try await withTestServer(compression: false) { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=3&size=\(size)&fragment=\(fragment)&type=\(text ? "text" : "binary")"))
            var received: [WebSocketMessage] = []
            for await message in connection.messages {
                received.append(message)
                if received.count == 3 { break }
            }
            #expect(received.count == 3)
            for (index, message) in received.enumerated() {
                #expect(message.byteCount == size)
                if text {
                    guard case .text(let string) = message else { Issue.record("expected text"); continue }
                    #expect(string.hasPrefix(String(repeating: "0", count: 9) + "\(index):"))
                } else {
                    guard case .binary(let data) = message else { Issue.record("expected binary"); continue }
                    #expect(data.prefix(8) == Data([0, 0, 0, 0, 0, 0, 0, UInt8(index)]))
                }
            }
        }
    }

    @Test("invalid UTF-8 in a text message closes with 1007", arguments: [false, true])
    func invalidUTF8(split: Bool) async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: split ? "/bad-utf8?split=1" : "/bad-utf8"))
            var count = 0
            for await _ in connection.messages { count += 1 }
            #expect(count == 0)
            #expect(connection.closeCode == .invalidFramePayloadData)
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.invalidFramePayloadData])
        }
    }

    @Test("a message over maxMessageSize closes with 1009 and reports messageTooLarge")
    func oversizedMessage() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxMessageSize = 1000
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=2&size=2000"), configuration: configuration)
            var count = 0
            for await _ in connection.messages { count += 1 }
            #expect(count == 0)
            #expect(connection.closeCode == .messageTooBig)
            #expect(connection.error == .messageTooLarge(limit: 1000))
            // What to do about it: the limit's name, and reading in pieces.
            let description = connection.error?.description ?? ""
            #expect(description.contains("maxMessageSize") && description.contains("streamsIncomingMessages"), "\(description)")
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.messageTooBig])
        }
    }

    @Test("messages up to maxMessageSize, sent in many fragments, are accepted")
    func messageAtTheLimit() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxMessageSize = 50_000
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=1&size=50000&fragment=999"), configuration: configuration)
            var iterator = connection.messages.makeAsyncIterator()
            let message = await iterator.next()
            #expect(message?.byteCount == 50_000)
            await connection.close()
        }
    }
}
