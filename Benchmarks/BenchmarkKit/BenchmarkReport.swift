/// The one JSON line a benchmark run prints: who ran what, whether it finished, and the
/// workload's figures.
///
/// Keys keep a fixed order (`client`, `workload`, `ok`, `count`, `completed`, `elapsed_s`,
/// then the figures in the order added) so lines from wsbench and wsbench-c diff cleanly.
///
/// ```swift
/// var report = BenchmarkReport(client: "websocketstreams", workload: "W1", ok: true,
///                              count: 20_000, completed: 20_000, elapsedSeconds: 0.52)
/// report.add("rtt_per_s", 38_461.5)
/// print(report.jsonLine)
/// ```
public struct BenchmarkReport: Sendable, Equatable {
    /// The client that ran: `websocketstreams` or `raw-c`.
    public var client: String
    /// `W1` ... `W6` or `autobahn`.
    public var workload: String
    /// Whether every requested message or connection completed within the time limit.
    public var ok: Bool
    /// What was asked for: messages (all connections together for W6) or connections (W5).
    public var count: Int
    /// How many of them completed.
    public var completed: Int
    /// Seconds from the first connection's opening to the last completion.
    public var elapsedSeconds: Double
    /// The workload's figures, in output order.
    public private(set) var figures: [(name: String, value: Double)] = []
    /// Why the run failed, when it did.
    public var error: String?

    /// A report without figures; add them with ``add(_:_:)``.
    public init(client: String, workload: String, ok: Bool, count: Int, completed: Int, elapsedSeconds: Double) {
        self.client = client
        self.workload = workload
        self.ok = ok
        self.count = count
        self.completed = completed
        self.elapsedSeconds = elapsedSeconds
    }

    /// Appends a figure (e.g. `msgs_per_s`); non-finite values are written as `null`.
    public mutating func add(_ name: String, _ value: Double) {
        figures.append((name, value))
    }

    /// The report as one line of JSON, without a trailing newline.
    public var jsonLine: String {
        var fields = [
            "\"client\":\(Self.quoted(client))",
            "\"workload\":\(Self.quoted(workload))",
            "\"ok\":\(ok)",
            "\"count\":\(count)",
            "\"completed\":\(completed)",
            "\"elapsed_s\":\(Self.number(elapsedSeconds))",
        ]
        for figure in figures {
            fields.append("\(Self.quoted(figure.name)):\(Self.number(figure.value))")
        }
        if let error { fields.append("\"error\":\(Self.quoted(error))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    public static func == (lhs: BenchmarkReport, rhs: BenchmarkReport) -> Bool {
        lhs.jsonLine == rhs.jsonLine
    }

    /// A JSON number with up to 6 decimals; `null` when not finite.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        var text = String(format6: value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

extension String {
    /// `value` with exactly six decimals, without Foundation's `String(format:)`.
    init(format6 value: Double) {
        let negative = value < 0
        let scaled = (abs(value) * 1_000_000).rounded()
        let whole = Int64(scaled / 1_000_000)
        let fraction = Int64(scaled.truncatingRemainder(dividingBy: 1_000_000))
        let digits = String(fraction)
        self = (negative ? "-" : "") + "\(whole)." + String(repeating: "0", count: 6 - digits.count) + digits
    }
}
