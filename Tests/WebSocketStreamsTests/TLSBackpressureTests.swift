import FoundationEssentials
import Glibc
import Testing
@testable import LibWebSocketsLoop
@testable import WebSocketStreams
import WebSocketTestServer

/// A burst of small messages over TLS hung the client at 100% CPU when reading paused
/// while TLS held decrypted bytes. TLS now stops decrypting while reading is paused and is
/// pumped again when it resumes.
@Suite("wss:// under backpressure")
struct TLSBackpressureTests {
    /// Reads every pushed message and checks its sequence number (the push route numbers
    /// them from 0 in their first 8 bytes).
    private static func receiveAll(
        _ connection: WebSocket, count: Int, everyN pauseEvery: Int?, pause: Duration = .zero
    ) async throws -> (received: Int, outOfOrder: Int) {
        var expected: UInt64 = 0
        var outOfOrder = 0
        for await message in connection.messages {
            guard case .binary(let data) = message, data.count == 128 else {
                Issue.record("unexpected message \(message)")
                break
            }
            let sequence = data.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if sequence != expected { outOfOrder += 1 }
            expected += 1
            if let pauseEvery, expected % UInt64(pauseEvery) == 0 { try await Task.sleep(for: pause) }
            if expected == UInt64(count) { break }
        }
        return (Int(expected), outOfOrder)
    }

    @Test("200,000 pushed messages over wss:// arrive once and in order, fast consumer")
    func burstFastConsumer() async throws {
        let loop = WebSocketEventLoop(name: "wss-burst")
        try await withTestServer(tls: .init(), compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let count = 200_000
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=\(count)&size=128"), configuration: configuration, eventLoop: loop)
            let (received, outOfOrder) = try await Self.receiveAll(connection, count: count, everyN: nil)
            #expect(received == count)
            #expect(outOfOrder == 0)
            #expect(connection.inboundPeakBytes <= configuration.maxBufferedBytes + 128)
        }
        await loop.shutdown(gracePeriod: .zero)
        #expect(loop.thread.spinningPasses == 0, "the loop spun: passes without progress, back to back")
    }

    @Test("a slow consumer makes reading over wss:// pause and resume many times; nothing is lost or repeated")
    func burstSlowConsumer() async throws {
        let loop = WebSocketEventLoop(name: "wss-slow")
        try await withTestServer(tls: .init(), compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            configuration.maxBufferedMessages = 16
            let count = 20_000
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=\(count)&size=128"), configuration: configuration, eventLoop: loop)
            let (received, outOfOrder) = try await Self.receiveAll(
                connection, count: count, everyN: 500, pause: .milliseconds(2))
            #expect(received == count)
            #expect(outOfOrder == 0)
            // At most one message past the limit is ever buffered.
            #expect(connection.inboundPeakBytes <= 17 * 128)
        }
        await loop.shutdown(gracePeriod: .zero)
        #expect(loop.thread.spinningPasses == 0, "the loop spun: passes without progress, back to back")
    }

    @Test("while reading is paused, the loop's thread sleeps (wss:// and ws://)", arguments: [true, false])
    func pausedLoopIsIdle(tls: Bool) async throws {
        let name = "idle-\(tls ? "s" : "p")-\(UInt16.random(in: 0...9999))"
        let loop = WebSocketEventLoop(name: name)
        try await withTestServer(tls: tls ? .init() : nil, compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            configuration.maxBufferedMessages = 8
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=200000&size=128"), configuration: configuration, eventLoop: loop)
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() != nil)
            // The consumer stops reading: the buffer fills and reading pauses, with TLS
            // holding records it has not decrypted. Wait until the pause has taken hold.
            await eventually("reading pauses") { connection.inboundPeakBytes >= 8 * 128 }
            // While it stays paused, another connection on the same loop makes 50 round trips:
            // the loop's passes are theirs (a few each); a loop that spins on the paused
            // connection makes thousands in the same time.
            let echo = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration, eventLoop: loop)
            let passesBefore = loop.thread.passes
            for _ in 0..<50 { _ = try await echo.ping() }
            let passes = loop.thread.passes - passesBefore
            print("paused loop (\(tls ? "wss" : "ws")): \(passes) passes for 50 round trips on another connection")
            #expect(passes < 50 * 8, "the loop made \(passes) passes for 50 round trips while reading was paused")
            await echo.close()
            // Reading resumes and more arrives.
            #expect(await messages.next() != nil)
            await connection.close(code: .goingAway)
        }
        await loop.shutdown(gracePeriod: .zero)
        #expect(loop.thread.spinningPasses == 0, "the loop spun: passes without progress, back to back")
    }
}
