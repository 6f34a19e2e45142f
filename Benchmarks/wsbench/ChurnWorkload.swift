import BenchmarkKit
import WebSocketStreams

/// `--workload churn`: `count` connect / echo / close cycles, `connections` at a time, in
/// one process. Reports open descriptors and resident memory before and after (once all
/// connections are gone): a client that leaks anything per connection shows it here.
enum ChurnWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let clock = ContinuousClock()
        do {
            // Every loop's context and the one-time allocations, before counting.
            for loop in parameters.loops { try await cycle(parameters, on: loop) }
        } catch {
            return failedToConnect(parameters, error)
        }
        let descriptorsBefore = ProcessResources.openDescriptorCount()
        let residentBefore = ProcessResources.residentKilobytes()
        let start = clock.now
        let workers = max(1, parameters.connections)
        let completed = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var done = 0
                    var index = worker
                    while index < parameters.count, !Task.isCancelled {
                        if (try? await cycle(parameters)) != nil { done += 1 }
                        index += workers
                    }
                    return done
                }
            }
            return await group.reduce(0, +)
        }
        let elapsed = clock.now - start
        let descriptorsAfter = ProcessResources.openDescriptorCount()
        let residentAfter = ProcessResources.residentKilobytes()
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: completed == parameters.count,
            count: parameters.count, completed: completed, elapsed: elapsed)
        builder.add("cycles_per_s", elapsed.seconds > 0 ? Double(completed) / elapsed.seconds : 0)
        builder.add("fds_before", Double(descriptorsBefore))
        builder.add("fds_after", Double(descriptorsAfter))
        builder.add("rss_before_kb", Double(residentBefore))
        builder.add("rss_after_kb", Double(residentAfter))
        return builder.report
    }

    /// One connection: open, one echo, close with 1000.
    private static func cycle(_ parameters: BenchmarkParameters, on loop: WebSocketEventLoop? = nil) async throws {
        let connection = try await WebSocket.connect(
            to: parameters.url, configuration: parameters.configuration, eventLoop: loop ?? parameters.nextLoop())
        try await connection.send(.text("churn"))
        var messages = connection.messages.makeAsyncIterator()
        guard await messages.next() == .text("churn") else {
            throw ChurnError.noEcho
        }
        await connection.close()
    }

    enum ChurnError: Error { case noEcho }
}
