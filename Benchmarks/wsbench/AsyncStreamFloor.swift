import BenchmarkKit
import Synchronization

/// `--workload asyncstream`: what one element of an `AsyncStream(unfolding:)` costs on
/// this machine with no I/O at all: the floor under any client whose messages are an
/// `AsyncStream`, whatever its transport. Reported as `ns_per_element`.
enum AsyncStreamFloor {
    /// Produces the next number without suspending, the cheapest possible source.
    private final class Counter: Sendable {
        let next = Atomic<Int>(0)
    }

    @inline(never)
    private static func produce(_ counter: Counter, limit: Int) async -> Int? {
        let value = counter.next.add(1, ordering: .relaxed).newValue
        return value <= limit ? value : nil
    }

    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let count = parameters.count > 0 ? parameters.count : 2_000_000
        let counter = Counter()
        let stream = AsyncStream<Int>(unfolding: { await produce(counter, limit: count) })
        let clock = ContinuousClock()
        let start = clock.now
        var received = 0
        var checksum = 0
        for await value in stream {
            received += 1
            checksum &+= value
        }
        let elapsed = clock.now - start
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: received == count && checksum == count * (count + 1) / 2,
            count: count, completed: received, elapsed: elapsed)
        builder.add("ns_per_element", received > 0 ? elapsed.seconds * 1e9 / Double(received) : 0)
        return builder.report
    }
}
