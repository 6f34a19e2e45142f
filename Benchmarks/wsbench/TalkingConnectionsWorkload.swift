import BenchmarkKit
import WebSocketStreams

/// W9: `connections` connections with the configuration's defaults (compression on, as a
/// user gets it), each sending a `size` JSON text of the trade feed and reading its echo once
/// per `period`, `count` rounds, the connections spread evenly over each period. What a
/// connection that talks now and then costs:
///
/// - `rss_per_conn_kb`: resident memory after the first round (every connection has sent and
///   received one message) minus the resident memory before connecting, per connection;
///   `rss_per_conn_kb_idle` before any message, `rss_per_conn_kb_end` after the last round;
/// - `wire_bytes_per_msg_out` / `_in`: TCP payload bytes (frame headers included) per message
///   each way during the rounds, from `TCP_INFO` over every socket;
/// - `cpu_us_per_msg`: this process's CPU during the rounds per message sent and its echo read.
///
/// One task drives the rounds: it sends on a connection and awaits the echo before moving to
/// the next slot, so a round takes `period` unless the echoes are slower than the slots. Every
/// echo must equal the message sent, byte for byte (the run fails otherwise): with a larger
/// `--size` and the server's window options, W9 also checks compression across idle pauses.
enum TalkingConnectionsWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let target = max(1, parameters.connections)
        do {
            try await ConnectionBatch.warmUp(parameters)
        } catch {
            return failedToConnect(parameters, error)
        }
        let batch = await ConnectionBatch.open(target, parameters)
        let idle = ProcessResources.residentKilobytes()
        let rounds = max(1, parameters.count)
        let feed = JSONFeed.messages(count: 1000, size: parameters.size)
        var readers = batch.open.map { $0.messages.makeAsyncIterator() }
        var failure = batch.failure
        var completed = 0
        var talked = idle

        let clock = ContinuousClock()
        let wireBefore = ProcessResources.tcpPayloadBytes()
        let cpuBefore = ProcessResources.cpuSeconds()
        let start = clock.now
        let slot = parameters.period / max(1, batch.open.count)
        rounds: for round in 0..<rounds {
            let roundStart = start + parameters.period * round
            for (index, connection) in batch.open.enumerated() {
                try? await Task.sleep(until: roundStart + slot * index, clock: clock)
                if Task.isCancelled { break rounds }
                let text = feed[(index * rounds + round) % feed.count]
                do {
                    try await connection.send(.text(text))
                } catch {
                    failure = failure ?? "send failed: \(error)"
                    break rounds
                }
                guard let echo = await readers[index].next() else {
                    failure = failure ?? endedEarly(connection)
                    break rounds
                }
                // Byte for byte: a compressor or decompressor that lost its context shows here.
                guard echo == .text(text) else {
                    failure = failure ?? "connection \(index), round \(round): the echo differs from the message sent"
                    break rounds
                }
                completed += 1
            }
            if round == 0 { talked = ProcessResources.residentKilobytes() }
        }
        let cpu = ProcessResources.cpuSeconds() - cpuBefore
        let elapsed = clock.now - start
        let wireAfter = ProcessResources.tcpPayloadBytes()
        let end = ProcessResources.residentKilobytes()

        let open = Double(max(1, batch.open.count))
        let messages = Double(max(1, completed))
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: failure == nil && completed == target * rounds,
            count: target * rounds, completed: completed, elapsed: elapsed)
        builder.add("connections", Double(batch.open.count))
        builder.add("open_s", batch.elapsed.seconds)
        builder.add("rss_per_conn_kb", Double(talked - batch.residentBefore) / open)
        builder.add("rss_per_conn_kb_idle", Double(idle - batch.residentBefore) / open)
        builder.add("rss_per_conn_kb_end", Double(end - batch.residentBefore) / open)
        builder.add("wire_bytes_per_msg_out", Double(wireAfter.sent - wireBefore.sent) / messages)
        builder.add("wire_bytes_per_msg_in", Double(wireAfter.received - wireBefore.received) / messages)
        builder.add("cpu_us_per_msg", cpu / messages * 1e6)
        if let failure { builder.fail(failure) }
        await batch.closeAll()
        readers.removeAll()
        return builder.report
    }
}
