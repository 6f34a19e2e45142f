import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Echo round trips against the test server")
struct EchoTests {
    @Test("text and binary messages come back with their type")
    func textAndBinary() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            try await connection.send(.text("hello"))
            try await connection.send(.binary(Data([1, 2, 3])))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("hello"))
            #expect(await iterator.next() == .binary(Data([1, 2, 3])))
            await connection.close(code: .normalClosure, reason: "bye")
            #expect(connection.closeCode == .normalClosure)
            #expect(connection.closeReason == "bye")
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [.normalClosure])
            #expect(seen.connections.first?.closeReasonReceived == "bye")
        }
    }
}
