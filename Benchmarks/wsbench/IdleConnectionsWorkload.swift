import BenchmarkKit
import WebSocketStreams

/// W5: `connections` connections opened and held idle. Measures the time until all are
/// open and the resident memory each one adds.
///
/// Connections are opened by a task group with at most `inflight` handshakes under way
/// (default 100), as a client opening many connections should: a thousand simultaneous
/// child tasks would cost more memory (their frames, freed after, stay resident in the
/// heap) and more time than the handshakes themselves.
///
/// One connection per loop is opened and closed first, so the event loops' contexts and
/// the runtime's one-time allocations are in the baseline, as lws's context is in wsbench-c's.
enum IdleConnectionsWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let target = max(1, parameters.connections)
        do {
            try await ConnectionBatch.warmUp(parameters)
        } catch {
            return failedToConnect(parameters, error)
        }
        let batch = await ConnectionBatch.open(target, parameters)
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: batch.open.count == target, count: target, completed: batch.open.count,
            elapsed: batch.elapsed)
        builder.add("open_s", batch.elapsed.seconds)
        builder.add("rss_per_conn_kb", batch.residentPerConnection)
        if let failure = batch.failure { builder.fail(failure) }
        await batch.closeAll()
        return builder.report
    }
}
