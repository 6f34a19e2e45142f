import FoundationEssentials
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("Backpressure in both directions")
struct BackpressureTests {
    @Test("a slow consumer of 200 MB keeps memory bounded and gets every message in order")
    func slowConsumerBoundedMemory() async throws {
        let size = 64 * 1024
        let count = 200 * 1024 * 1024 / size
        // Its own loop, so 200 MB of traffic does not slow other tests' connections.
        let loop = WebSocketEventLoop(name: "backpressure-rx")
        try await withTestServer(compression: false) { server in
            let baseline = residentMemoryBytes()
            var peak = baseline
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedMessages = 64
            configuration.maxBufferedBytes = 4 * 1024 * 1024
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=\(count)&size=\(size)"), configuration: configuration, eventLoop: loop)
            var expected: UInt64 = 0
            var outOfOrder = 0
            for await message in connection.messages {
                guard case .binary(let data) = message, data.count == size else {
                    Issue.record("unexpected message \(message)")
                    break
                }
                let sequence = data.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                if sequence != expected { outOfOrder += 1 }
                expected += 1
                if expected % 256 == 0 {
                    peak = max(peak, residentMemoryBytes())
                    // Slower than the server: let the buffer fill so reading must pause.
                    try await Task.sleep(for: .milliseconds(2))
                }
                if expected == UInt64(count) { break }
            }
            #expect(expected == UInt64(count))
            #expect(outOfOrder == 0)
            // The bound itself: never more than the byte limit plus the message that hit it.
            // (RSS is printed for the record; with the whole suite running in this process
            // it is no measure of one connection. Benchmarks/ measures memory.)
            let growth = peak - baseline
            print("backpressure: pushed \(count * size / 1_048_576) MB, peak buffered \(connection.inboundPeakBytes / 1024) KiB, peak RSS growth \(growth / 1_048_576) MB")
            #expect(connection.inboundPeakBytes <= configuration.maxBufferedBytes + size)
            #expect(connection.inboundPeakBytes >= size, "nothing was ever buffered")
        }
        await loop.shutdown(gracePeriod: .zero)
    }

    @Test("send waits once the backlog passes the watermark, and cancelling it queues nothing")
    func sendSuspendsAtWatermark() async throws {
        let loop = WebSocketEventLoop(name: "backpressure-tx")
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedSendBytes = 256 * 1024
            configuration.compression = false
            let connection = try await WebSocket.connect(
                to: server.url(path: "/stall"), configuration: configuration, eventLoop: loop)
            let chunk = Data(repeating: 0x42, count: 64 * 1024)
            let sender = Task {
                var accepted = 0
                do {
                    while true {
                        try await connection.send(.binary(chunk))
                        accepted += 1
                    }
                } catch {
                    return (accepted, error)
                }
            }
            // Until the kernel's socket buffers are full the loop keeps draining the queue,
            // so a sender can be seen parked while its wake-up is on the way. Wait for the
            // steady state: the peer reads nothing, the queue is at the watermark, a sender waits.
            let deadline = ContinuousClock.now + .seconds(5)
            var backlog = connection.connection.machine.withLock { $0.sendBacklog }
            while backlog.parkedSenders == 0 || backlog.bytes < 256 * 1024 {
                #expect(ContinuousClock.now < deadline, "no sender ever waited at the watermark: \(backlog)")
                if ContinuousClock.now >= deadline { break }
                await Task.yield()
                backlog = connection.connection.machine.withLock { $0.sendBacklog }
            }
            sender.cancel()
            let (accepted, error) = await sender.value
            #expect(error is CancellationError)
            #expect(accepted >= 4)  // at least the watermark's worth (256 KiB / 64 KiB)
            let after = connection.connection.machine.withLock { $0.sendBacklog }
            #expect(after.parkedSenders == 0)
            #expect(after.bytes <= backlog.bytes)
        }
        // The stalled peer never reads, so the close frame cannot get through: drop it.
        await loop.shutdown(gracePeriod: .zero)
    }

    @Test("concurrent senders: every message arrives once and intact")
    func concurrentSenders() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.maxBufferedSendBytes = 64 * 1024
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let tasks = 40
            let perTask = 25
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perTask {
                            let body = "task \(task) message \(index) " + String(repeating: "x", count: (task * 131 + index * 17) % 3000)
                            try await connection.send(.text(body))
                        }
                    }
                }
                try await group.waitForAll()
            }
            var seen = Set<String>()
            var lastIndex = [Int: Int]()
            var inOrderPerTask = true
            for await message in connection.messages {
                guard case .text(let text) = message else { continue }
                let words = text.split(separator: " ")
                let task = Int(words[1])!, index = Int(words[3])!
                let expectedLength = "task \(task) message \(index) ".utf8.count + (task * 131 + index * 17) % 3000
                #expect(text.utf8.count == expectedLength)
                if let last = lastIndex[task], last >= index { inOrderPerTask = false }
                lastIndex[task] = index
                seen.insert(text)
                if seen.count == tasks * perTask { break }
            }
            #expect(seen.count == tasks * perTask)
            #expect(inOrderPerTask)
        }
    }
}
