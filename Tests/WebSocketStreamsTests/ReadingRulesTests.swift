import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// One reader at a time, the right sequence for the configuration, and `receive()`:
/// mistakes in reading end a connection with an error that says what to do, never the process.
@Suite("Reading rules: receive(), one reader, messages on a streaming connection")
struct ReadingRulesTests {
    @Test("messages and messageBatches on a connection that streams end at once; error names messageStreams")
    func messagesOnStreamingConnection() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.streamsIncomingMessages = true
            for batches in [false, true] {
                let connection = try await WebSocket.connect(to: server.url(path: "/push?count=3&size=10"), configuration: configuration)
                var count = 0
                if batches {
                    for await batch in connection.messageBatches { count += batch.count }
                } else {
                    for await _ in connection.messages { count += 1 }
                }
                #expect(count == 0)
                let error = try #require(connection.error)
                #expect(error.code == .invalidUse)
                #expect(error.description.contains("messageStreams"))
                #expect(error.description.contains("streamsIncomingMessages"))
                await connection.close()
                #expect(connection.error?.code == .invalidUse)
            }
        }
    }

    @Test("receive() in a helper called again and again keeps the connection open; then throws the close")
    func receiveInAHelper() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            func ask(_ question: String) async throws -> WebSocketMessage {
                try await connection.send(.text(question))
                return try await connection.receive()
            }
            for round in 1...5 {
                #expect(try await ask("question \(round)") == .text("question \(round)"))
                #expect(connection.isOpen)
            }
            // A message taken by receive() is not seen again by messages, and the reverse.
            try await connection.send(.text("a"))
            try await connection.send(.text("b"))
            #expect(try await connection.receive() == .text("a"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("b"))
            await connection.close(code: .normalClosure, reason: "done")
            #expect(await iterator.next() == nil)
            let error = try #require(await expectWebSocketError { _ = try await connection.receive() })
            #expect(error.code == .closed)
            #expect(error.closeCode == .normalClosure)
        }
    }

    @Test("a cancelled receive() leaves the connection open and loses nothing")
    func cancelledReceive() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            let waiting = Task { try await connection.receive() }
            await eventually("a receive() waits") { connection.connection.machine.withLock { $0.inbound.hasParkedConsumer } }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { _ = try await waiting.value }
            #expect(connection.isOpen)
            try await connection.send(.text("after"))
            #expect(try await connection.receive() == .text("after"))
            await connection.close()
        }
    }

    @Test("a second concurrent reader fails loudly: receive() throws, a second iteration ends the connection")
    func secondReader() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.text("1"))
            var first = connection.messages.makeAsyncIterator()
            #expect(await first.next() == .text("1"))
            // The first iteration is alive (not released): it is the reader.
            let refused = try #require(await expectWebSocketError { _ = try await connection.receive() })
            #expect(refused.code == .invalidUse)
            #expect(refused.description.contains("one task"))
            #expect(connection.isOpen)
            try await connection.send(.text("2"))
            let second = Task {
                var count = 0
                for await _ in connection.messages { count += 1 }
                return count
            }
            #expect(await second.value == 0)
            #expect(connection.error?.code == .invalidUse)
            // The first reader still gets what had arrived, then the end; nothing was split.
            var rest: [WebSocketMessage] = []
            while let message = await first.next() { rest.append(message) }
            #expect(rest.allSatisfy { $0 == .text("2") })
            #expect(connection.error?.code == .invalidUse)
            #expect(connection.closeCode != nil)
        }
    }

    @Test("a message of messageStreams read in one task while another asks for the next: refused, not a crash")
    func streamedPiecesReadByTwoTasks() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.streamsIncomingMessages = true
            let connection = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: configuration)
            // A message whose first frame comes back at once and whose end never comes.
            let (pieces, feed) = AsyncStream<Data>.makeStream()
            let sender = Task { try await connection.send(streaming: pieces, as: .binary) }
            feed.yield(Data(repeating: 1, count: 100))
            var streams = connection.messageStreams.makeAsyncIterator()
            let message = try #require(await streams.next())
            let reader = Task { () -> WebSocketError? in
                do {
                    for try await _ in message {}
                    return nil
                } catch {
                    return error as? WebSocketError
                }
            }
            await eventually("a receive() waits") { connection.connection.machine.withLock { $0.inbound.hasParkedConsumer } }   // the reader waits inside the message
            #expect(await streams.next() == nil)
            #expect(connection.error?.code == .invalidUse)
            #expect(await reader.value?.code == .invalidUse)
            feed.finish()
            _ = try? await sender.value
        }
    }
}

@Suite("error is set after the SDK closed with 1007 for an undecodable message")
struct UndecodableErrorTests {
    private struct Greeting: Decodable { let hello: String }

    @Test("messages(decoding:) failing keeps undecodableMessage as the connection's error")
    func undecodableIsTheError() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.text("not json"))
            let thrown = try #require(await expectWebSocketError {
                for try await _ in connection.messages(decoding: Greeting.self) {}
            })
            #expect(thrown.code == .undecodableMessage)
            #expect(connection.closeCode == .invalidFramePayloadData)
            #expect(connection.error?.code == .undecodableMessage)
            #expect(connection.ending?.error?.code == .undecodableMessage)
        }
    }
}
