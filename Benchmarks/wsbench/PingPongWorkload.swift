import BenchmarkKit
import WebSocketStreams

/// W1: one small text message at a time, each sent only after the previous one's echo
/// arrived. Measures round trips per second and their latency distribution.
enum PingPongWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let clock = ContinuousClock()
        let connection: WebSocket
        do {
            connection = try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: parameters.nextLoop())
        } catch {
            return failedToConnect(parameters, error)
        }
        let text = String(repeating: "x", count: parameters.size)
        var messages = connection.messages.makeAsyncIterator()
        var roundTrips: [Double] = []
        roundTrips.reserveCapacity(parameters.count)
        var failure: String?
        let start = clock.now
        do {
            while roundTrips.count < parameters.count {
                let sentAt = clock.now
                try await connection.send(.text(text))
                guard await messages.next() != nil else {
                    failure = endedEarly(connection)
                    break
                }
                roundTrips.append((clock.now - sentAt).microseconds)
            }
        } catch {
            failure = "\(error)"
        }
        let elapsed = clock.now - start
        await connection.close()

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: roundTrips.count == parameters.count,
            count: parameters.count, completed: roundTrips.count, elapsed: elapsed)
        let percentiles = Percentiles(roundTrips)
        builder.add("rtt_per_s", elapsed.seconds > 0 ? Double(roundTrips.count) / elapsed.seconds : 0)
        builder.add("p50_us", percentiles.value(at: 50) ?? 0)
        builder.add("p99_us", percentiles.value(at: 99) ?? 0)
        if let failure { builder.fail(failure) }
        return builder.report
    }
}

/// The report of a run whose (first) connection could not be opened.
func failedToConnect(_ parameters: BenchmarkParameters, _ error: any Error) -> BenchmarkReport {
    var builder = BenchmarkReportBuilder(
        workload: parameters.workload, ok: false, count: parameters.count, completed: 0, elapsed: .zero)
    builder.fail("connect failed: \(error)")
    return builder.report
}

/// Why a connection's message stream ended before the workload was done.
func endedEarly(_ connection: WebSocket) -> String {
    if let error = connection.error { return "connection ended: \(error)" }
    if let code = connection.closeCode { return "connection closed: \(code) \(connection.closeReason)" }
    return "stopped before completing (time limit)"
}
