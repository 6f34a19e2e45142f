import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Messages that reached the server's socket but were still unread when the server dropped
/// the connection: the server reads them out at the drop and records them apart, so a soak
/// can tell them (acknowledged by TCP, never read) from messages nobody saw.
@Suite("Messages discarded at a drop are counted by the test server")
struct DropDiscardTests {
    /// Bytes that sockets connected to 127.0.0.1:`port` have written and the peer's TCP has
    /// not acknowledged yet (`tx_queue` in /proc/net/tcp), or nil when there is no such socket.
    private static func unacknowledgedBytes(toPort port: Int) -> Int? {
        // Line by line: a read of a procfs table may stop at a page.
        guard let file = fopen("/proc/net/tcp", "r") else { return nil }
        defer { fclose(file) }
        let remote = "0100007F:" + String(format: "%04X", port)
        var total: Int?
        var buffer = [CChar](repeating: 0, count: 512)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let fields = line.split(separator: " ")
            // sl, local address, remote address, state (01: established), tx_queue:rx_queue.
            guard fields.count > 4, fields[2] == remote, fields[3] == "01" else { continue }
            let queues = fields[4].split(separator: ":")
            guard let sending = queues.first.flatMap({ Int($0, radix: 16) }) else { continue }
            total = (total ?? 0) + sending
        }
        return total
    }

    @Test("messages the server's socket acknowledged but the server never read are counted at the drop, in order",
          arguments: [false, true])
    func stalledMessagesCountedAtDrop(overTLS: Bool) async throws {
        try await withTestServer(tls: overTLS ? .init() : nil, compression: false, recordTexts: true) { server in
            var configuration = WebSocketConfiguration()
            if let ca = server.caCertificateFile { configuration.tls.trustedCAFile = ca }
            // /stall stops reading after the handshake: what the client sends stays in the socket.
            let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            let texts = (0..<5).map { "held \($0)" }
            for text in texts { try await connection.send(.text(text)) }
            await eventually("the server's TCP acknowledging every byte sent") {
                Self.unacknowledgedBytes(toPort: server.port) == 0
            }
            #expect(await server.disconnectAll() == 1)
            var replies = connection.messages.makeAsyncIterator()
            while await replies.next() != nil {}
            let record = try #require(server.snapshot.connections.first)
            #expect(record.messagesReceived == 0)
            #expect(record.messagesDiscardedAtDrop == 5)
            #expect(record.textsDiscardedAtDrop == texts)
            #expect(server.snapshot.allTextsDiscardedAtDrop == texts)
            #expect(!record.partialMessageDiscardedAtDrop)
            // Each frame: 2 header bytes, a 4-byte mask, 6 payload bytes.
            #expect(record.bytesDiscardedAtDrop == 5 * 12)
            // The client saw them acknowledged: they are delivered as far as any client can tell.
            #expect(connection.unsentMessages.isEmpty)
        }
    }

    @Test("a connection dropped with nothing unread records nothing discarded")
    func nothingUnread() async throws {
        try await withTestServer(compression: false, recordTexts: true) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"))
            var replies = connection.messages.makeAsyncIterator()
            try await connection.send(.text("echoed"))
            #expect(await replies.next() == .text("echoed"))
            #expect(await server.disconnectAll() == 1)
            while await replies.next() != nil {}
            let record = try #require(server.snapshot.connections.first)
            #expect(record.textsReceived == ["echoed"])
            #expect(record.messagesDiscardedAtDrop == 0)
            #expect(record.bytesDiscardedAtDrop == 0)
            #expect(!record.partialMessageDiscardedAtDrop)
        }
    }
}
