import BenchmarkKit
import WebSocketStreams

/// W7: `connections` connections opened (at most `inflight` handshakes at a time), held
/// `hold` with keep-alive pings on, then closed. Reports what each step costs per
/// connection, so the figures at 1,000 and at 15,000 can be set side by side: a cost that
/// grows faster than the connections shows as a per-connection figure that grows.
///
/// - `open_s`, `open_ms_per_1000`: until every connection is open;
/// - `rss_per_conn_kb`: resident memory added per open connection (after every loop's
///   context was made by a warm-up connection);
/// - `idle_cpu_pct`: this process's CPU time while holding, as a percentage of one core;
/// - `lost`: connections that ended while held (none should);
/// - `close_s`, `close_ms_per_1000`: from asking every connection to close to all closed.
enum ScaleWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let clock = ContinuousClock()
        let target = max(1, parameters.connections)
        do {
            try await ConnectionBatch.warmUp(parameters)
        } catch {
            return failedToConnect(parameters, error)
        }
        let batch = await ConnectionBatch.open(target, parameters)

        // Hold: nothing but keep-alive pings and their pongs.
        let cpuBefore = ProcessResources.cpuSeconds()
        let holdStart = clock.now
        try? await Task.sleep(for: parameters.hold)
        let held = clock.now - holdStart
        let cpuHeld = ProcessResources.cpuSeconds() - cpuBefore
        let lost = batch.open.filter { !$0.isOpen }.count

        let closeStart = clock.now
        await batch.closeAll()
        let closeElapsed = clock.now - closeStart
        let thousands = Double(max(1, batch.open.count)) / 1000

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: batch.open.count == target && lost == 0, count: target,
            completed: batch.open.count, elapsed: batch.elapsed)
        builder.add("connections", Double(batch.open.count))
        builder.add("open_s", batch.elapsed.seconds)
        builder.add("open_ms_per_1000", batch.elapsed.seconds * 1000 / thousands)
        builder.add("rss_per_conn_kb", batch.residentPerConnection)
        builder.add("hold_s", held.seconds)
        builder.add("idle_cpu_pct", held.seconds > 0 ? cpuHeld / held.seconds * 100 : 0)
        builder.add("lost", Double(lost))
        builder.add("close_s", closeElapsed.seconds)
        builder.add("close_ms_per_1000", closeElapsed.seconds * 1000 / thousands)
        if let failure = batch.failure { builder.fail(failure) }
        if lost > 0 { builder.fail("\(lost) connections ended while held") }
        return builder.report
    }
}
