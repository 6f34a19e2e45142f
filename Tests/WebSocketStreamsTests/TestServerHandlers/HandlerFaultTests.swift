import Foundation
import Synchronization
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Faults a handler sends on cue, each seen by a real client.
@Suite("TestServer handler faults")
struct HandlerFaultTests {
    private static func uncompressed(_ change: (inout WebSocketConfiguration) -> Void = { _ in }) -> WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.compression = false
        change(&configuration)
        return configuration
    }

    @Test("send(_:inFramesOf:) fragments: three frames make one message, and count as three")
    func fragments() async throws {
        let handler = TestServer.Handler { connection in
            try await connection.send(.text("abcdefghij"), inFramesOf: [3, 3])
            for await _ in connection.messages {}
        }
        try await TestServer.withServer(compression: false, handlers: ["/frames": handler]) { server in
            let whole = try await WebSocket.connect(
                to: server.url(path: "/frames"), configuration: Self.uncompressed { $0.maxFragmentsPerMessage = 3 })
            var messages = whole.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("abcdefghij"))
            await whole.close()

            // A client that allows two frames per message meets the third and fails the connection.
            let strict = try await WebSocket.connect(
                to: server.url(path: "/frames"), configuration: Self.uncompressed { $0.maxFragmentsPerMessage = 2 })
            var strictMessages = strict.messages.makeAsyncIterator()
            #expect(await strictMessages.next() == nil)
            #expect(strict.error != nil)
        }
    }

    @Test("ping(_:): the client answers, and the record counts its pong")
    func ping() async throws {
        let handler = TestServer.Handler { connection in
            try await connection.ping(Data("are you there".utf8))
            for await _ in connection.messages {}
        }
        try await TestServer.withServer(handlers: ["/ping": handler]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/ping"))
            let seen = try await server.waitUntil { $0.connections.first?.pongsReceived == 1 }
            #expect(seen.connections[0].pongsReceived == 1)
            await connection.close()
        }
    }

    @Test("drop(midMessage:after:): the client meets a message that never ends, and 1006")
    func dropMidMessage() async throws {
        let handler = TestServer.Handler { connection in
            try await connection.send(.text("whole"))
            await connection.drop(midMessage: .text(String(repeating: "a", count: 1000)), after: 100)
        }
        try await TestServer.withServer(compression: false, handlers: ["/cut": handler]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/cut"), configuration: Self.uncompressed())
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("whole"))
            #expect(await messages.next() == nil)
            #expect(connection.closeCode == .abnormalClosure)
            let seen = try await server.waitUntil { $0.openConnections.isEmpty && $0.handshakeCount == 1 }
            #expect(seen.connections[0].closeCodeSent == nil)
        }
    }

    @Test("stopReading(): the client's sends back up until resumeReading(), then all arrive in order")
    func stopAndResumeReading() async throws {
        let total = 512   // 32 MiB of 64 KiB messages: more than the socket buffers hold
        let resume = AsyncStream.makeStream(of: Void.self)
        let handler = TestServer.Handler { connection in
            await connection.stopReading()
            try await connection.send(.text("stopped"))
            for await _ in resume.stream { break }
            await connection.resumeReading()
            var count = 0
            for await message in connection.messages {
                guard case .binary(let data) = message, Int(data[0]) == count % 256 else { break }
                count += 1
                if count == total { break }
            }
            try await connection.send(.text("received \(count)"))
        }
        try await TestServer.withServer(compression: false, handlers: ["/stuck": handler]) { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: "/stuck"), configuration: Self.uncompressed { $0.maxBufferedSendBytes = 256 * 1024 })
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("stopped"))
            let sent = Atomic<Int>(0)
            let sender = Task {
                for index in 0..<total {
                    try await connection.send(.binary(Data(repeating: UInt8(index % 256), count: 64 * 1024)))
                    sent.add(1, ordering: .relaxed)
                }
            }
            // Wait until the client's sends stop moving for 200 ms: the server reads nothing.
            var last = -1
            var stillSince = ContinuousClock.now
            while ContinuousClock.now - stillSince < .milliseconds(200) {
                let now = sent.load(ordering: .relaxed)
                if now != last { (last, stillSince) = (now, .now) }
                try await Task.sleep(for: .milliseconds(10))
            }
            let heldAt = sent.load(ordering: .relaxed)
            #expect(heldAt < total, "the client sent all \(total) while the server was not reading")
            #expect(server.snapshot.connections.first?.messagesReceived == 0)
            resume.continuation.yield()
            try await sender.value
            #expect(await messages.next() == .text("received \(total)"))
            await connection.close()
        }
    }
}
