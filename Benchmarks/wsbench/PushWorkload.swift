import BenchmarkKit
import WebSocketStreams

/// W4 and W6: messages the server pushes as fast as it can (the URL carries the push
/// parameters, e.g. `/push?count=200000&size=128`), received on one connection (W4) or
/// on `connections` connections at once (W6), one by one from `messages` or, with
/// `--batches`, a batch at a time from `messageBatches`. The clock starts when the first
/// connection is open and stops when the last message arrives.
enum PushWorkload {
    /// What one connection saw.
    private struct Outcome: Sendable {
        var opened: ContinuousClock.Instant?
        var finished: ContinuousClock.Instant?
        var messages = 0
        var bytes = 0
        var failure: String?
    }

    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let connections = max(1, parameters.connections)
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<connections {
                group.addTask { await receive(parameters) }
            }
            var outcomes: [Outcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        let total = parameters.count * connections
        let messages = outcomes.reduce(0) { $0 + $1.messages }
        let bytes = outcomes.reduce(0) { $0 + $1.bytes }
        let start = outcomes.compactMap(\.opened).min()
        let end = outcomes.compactMap(\.finished).max()
        let elapsed = if let start, let end { end - start } else { Duration.zero }
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: messages == total, count: total, completed: messages, elapsed: elapsed)
        builder.addThroughput(messages: messages, bytes: bytes)
        if let failure = outcomes.compactMap(\.failure).first { builder.fail(failure) }
        return builder.report
    }

    private static func receive(_ parameters: BenchmarkParameters) async -> Outcome {
        // With `--executor loop`, each connection's consumer runs on that connection's own
        // loop (with `--loops N`, spread over N threads), not all on one.
        if parameters.runsOnLoop, let loop = parameters.nextLoop() {
            return await withTaskExecutorPreference(loop) { await receive(parameters, on: loop) }
        }
        return await receive(parameters, on: parameters.nextLoop())
    }

    private static func receive(_ parameters: BenchmarkParameters, on loop: WebSocketEventLoop?) async -> Outcome {
        let clock = ContinuousClock()
        var outcome = Outcome()
        let connection: WebSocket
        do {
            connection = try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: loop)
        } catch {
            outcome.failure = "connect failed: \(error)"
            return outcome
        }
        outcome.opened = clock.now
        if parameters.readsBatches {
            var batches = connection.messageBatches.makeAsyncIterator()
            while outcome.messages < parameters.count {
                guard let batch = await batches.next() else {
                    outcome.failure = endedEarly(connection)
                    break
                }
                outcome.messages += batch.count
                for message in batch { outcome.bytes += message.byteCount }
            }
            outcome.finished = clock.now
            await connection.close()
            return outcome
        }
        var messages = connection.messages.makeAsyncIterator()
        while outcome.messages < parameters.count {
            guard let message = await messages.next() else {
                outcome.failure = endedEarly(connection)
                break
            }
            outcome.messages += 1
            outcome.bytes += message.byteCount
        }
        outcome.finished = clock.now
        await connection.close()
        return outcome
    }
}
