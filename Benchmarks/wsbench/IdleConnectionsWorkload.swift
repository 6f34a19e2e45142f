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
        let start = clock.now
        var open: [WebSocket] = []
        open.reserveCapacity(target)
        var failure: String?
        await withTaskGroup(of: Result<WebSocket, any Error>.self) { group in
            var started = 0
            func startOne() {
                started += 1
                group.addTask {
                    do {
                        return .success(try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: parameters.nextLoop()))
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
        let elapsed = clock.now - start
        let residentAfter = ProcessResources.residentKilobytes()

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: open.count == target, count: target, completed: open.count, elapsed: elapsed)
        builder.add("open_s", elapsed.seconds)
        builder.add("rss_per_conn_kb", open.isEmpty ? 0 : Double(residentAfter - residentBefore) / Double(open.count))
        if let failure { builder.fail(failure) }

        await withTaskGroup(of: Void.self) { group in
            for connection in open {
                group.addTask { await connection.close() }
            }
        }
        return builder.report
    }
}
