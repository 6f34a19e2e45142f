import BenchmarkKit

/// Turns what a workload measured into a ``BenchmarkReport``.
struct BenchmarkReportBuilder {
    private(set) var report: BenchmarkReport

    init(workload: Workload, ok: Bool, count: Int, completed: Int, elapsed: Duration) {
        report = BenchmarkReport(
            client: BenchmarkParameters.clientName, workload: workload.rawValue, ok: ok,
            count: count, completed: completed, elapsedSeconds: elapsed.seconds)
    }

    /// Adds `name` unless it is already present.
    mutating func add(_ name: String, _ value: Double) {
        report.add(name, value)
    }

    /// Records why the run failed and marks it not ok.
    mutating func fail(_ reason: String) {
        report.ok = false
        report.error = reason
    }

    /// Adds `msgs_per_s` and `mb_per_s` for `messages` messages of `bytes` bytes in total.
    mutating func addThroughput(messages: Int, bytes: Int) {
        let seconds = report.elapsedSeconds
        add("msgs_per_s", seconds > 0 ? Double(messages) / seconds : 0)
        add("mb_per_s", seconds > 0 ? Double(bytes) / seconds / 1e6 : 0)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// The duration in microseconds, as a `Double`.
    var microseconds: Double { seconds * 1e6 }
}
