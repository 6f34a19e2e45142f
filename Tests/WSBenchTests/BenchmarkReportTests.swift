import BenchmarkKit
import Foundation
import Testing

@Suite("The JSON line wsbench prints")
struct BenchmarkReportTests {
    @Test("fixed keys first, in order, then the figures in the order added")
    func keyOrder() {
        var report = BenchmarkReport(client: "websocketstreams", workload: "W1", ok: true, count: 10, completed: 10, elapsedSeconds: 0.25)
        report.add("rtt_per_s", 40)
        report.add("p50_us", 21.5)
        report.add("p99_us", 40.125)
        #expect(report.jsonLine == #"{"client":"websocketstreams","workload":"W1","ok":true,"count":10,"completed":10,"elapsed_s":0.25,"rtt_per_s":40,"p50_us":21.5,"p99_us":40.125}"#)
    }

    @Test("parses back as JSON; errors are escaped; non-finite figures are null")
    func parsesBack() throws {
        var report = BenchmarkReport(client: "raw-c", workload: "W4", ok: false, count: 5, completed: 2, elapsedSeconds: 1.0 / 3)
        report.add("msgs_per_s", .infinity)
        report.error = "connect failed: \"refused\"\n\tline two"
        let object = try #require(JSONSerialization.jsonObject(with: Data(report.jsonLine.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == false)
        #expect(object["completed"] as? Int == 2)
        #expect((object["elapsed_s"] as? Double).map { abs($0 - 0.333333) < 1e-9 } == true)
        #expect(object["msgs_per_s"] is NSNull)
        #expect(object["error"] as? String == "connect failed: \"refused\"\n\tline two")
        #expect(!report.jsonLine.contains("\n"))
    }
}
