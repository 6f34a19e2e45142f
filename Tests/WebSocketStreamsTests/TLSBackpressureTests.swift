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
            let deadline = ContinuousClock.now + .seconds(5)
            while connection.inboundPeakBytes < 8 * 128, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(connection.inboundPeakBytes >= 8 * 128, "reading never paused")
            guard let thread = ThreadCPU(named: name) else {
                Issue.record("no thread named \(name)")
                return
            }
            let before = thread.cpuTime()
            try await Task.sleep(for: .milliseconds(500))
            let used = thread.cpuTime() - before
            // A spinning loop uses the whole 500 ms; an idle one almost nothing.
            #expect(used < .milliseconds(50), "the loop's thread used \(used) of CPU while reading was paused")
            // Reading resumes and more arrives.
            #expect(await messages.next() != nil)
            await connection.close(code: .goingAway)
        }
        await loop.shutdown(gracePeriod: .zero)
        #expect(loop.thread.spinningPasses == 0, "the loop spun: passes without progress, back to back")
    }
}

/// One thread of this process, found by its name, and the CPU time it has used.
struct ThreadCPU {
    let path: String

    init?(named name: String) {
        let prefix = String(name.prefix(15))
        guard let directory = opendir("/proc/self/task") else { return nil }
        defer { closedir(directory) }
        var found: String?
        while let entry = readdir(directory) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard tid.first?.isNumber == true else { continue }
            let comm = Self.read("/proc/self/task/\(tid)/comm").filter { $0 != "\n" }
            if comm == prefix { found = "/proc/self/task/\(tid)/stat" }
        }
        guard let found else { return nil }
        path = found
    }

    /// User plus system time, from the thread's `stat`.
    func cpuTime() -> Duration {
        let fields = Self.read(path).split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return .zero }
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return .milliseconds((user + system) * 1000 / ticks)
    }

    private static func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = fread(&buffer, 1, buffer.count - 1, file)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
