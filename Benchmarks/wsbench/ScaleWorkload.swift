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
            for loop in parameters.loops {
                let warmUp = try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: loop)
                await warmUp.close()
            }
        } catch {
            return failedToConnect(parameters, error)
        }
        let residentBefore = ProcessResources.residentKilobytes()
        let openStart = clock.now
        var open: [WebSocket] = []
        open.reserveCapacity(target)
        var failure: String?
        await withTaskGroup(of: Result<WebSocket, any Error>.self) { group in
            var started = 0
            func startOne() {
                started += 1
                group.addTask {
                    do {
                        return .success(try await WebSocket.connect(
                            to: parameters.url, configuration: parameters.configuration, eventLoop: parameters.nextLoop()))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            while started < min(max(1, parameters.inflight), target) { startOne() }
            for await result in group {
                switch result {
                case .success(let connection): open.append(connection)
                case .failure(let error): failure = failure ?? "connect failed: \(error)"
                }
                if started < target { startOne() }
            }
        }
        let openElapsed = clock.now - openStart
        let residentOpen = ProcessResources.residentKilobytes()

        // Hold: nothing but keep-alive pings and their pongs.
        let cpuBefore = ProcessResources.cpuSeconds()
        let holdStart = clock.now
        try? await Task.sleep(for: parameters.hold)
        let held = clock.now - holdStart
        let cpuHeld = ProcessResources.cpuSeconds() - cpuBefore
        let lost = open.filter { !$0.isOpen }.count

        let closeStart = clock.now
        await withTaskGroup(of: Void.self) { group in
            for connection in open {
                group.addTask { await connection.close() }
            }
        }
        let closeElapsed = clock.now - closeStart
        let thousands = Double(max(1, open.count)) / 1000

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: open.count == target && lost == 0, count: target, completed: open.count,
            elapsed: openElapsed)
        builder.add("connections", Double(open.count))
        builder.add("open_s", openElapsed.seconds)
        builder.add("open_ms_per_1000", openElapsed.seconds * 1000 / thousands)
        builder.add("rss_per_conn_kb", open.isEmpty ? 0 : Double(residentOpen - residentBefore) / Double(open.count))
        builder.add("hold_s", held.seconds)
        builder.add("idle_cpu_pct", held.seconds > 0 ? cpuHeld / held.seconds * 100 : 0)
        builder.add("lost", Double(lost))
        builder.add("close_s", closeElapsed.seconds)
        builder.add("close_ms_per_1000", closeElapsed.seconds * 1000 / thousands)
        if let failure { builder.fail(failure) }
        if lost > 0 { builder.fail("\(lost) connections ended while held") }
        return builder.report
    }
}
