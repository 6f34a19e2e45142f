import Foundation
import Testing
import WebSocketTestServer

/// Runs the built `wsbench` once per workload at tiny counts against a TestServer:
/// each run must finish, exit 0 and print one valid JSON line with its figures. No
/// speed is asserted (that is `make bench`'s job).
@Suite("wsbench smoke runs", .serialized)
struct WSBenchSmokeTests {
    @Test("W1 ping-pong", arguments: ["global", "loop"])
    func pingPong(executor: String) async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W1", "--url", server.url(path: "/echo"), "--count", "20", "--executor", executor])
            try expectComplete(report, workload: "W1", count: 20, figures: ["rtt_per_s", "p50_us", "p99_us"])
            #expect(report["client"] as? String == (executor == "loop" ? "websocketstreams+loop" : "websocketstreams"))
        }
    }

    @Test("W1 in latency mode", arguments: ["global", "loop"])
    func pingPongInLatencyMode(executor: String) async throws {
        try await withServer { server in
            let report = try await runBench([
                "--workload", "W1", "--url", server.url(path: "/echo"), "--count", "20", "--executor", executor,
                "--latency-mode", "--busy-poll-us", "50",
            ])
            try expectComplete(report, workload: "W1", count: 20, figures: ["rtt_per_s", "p50_us", "p99_us"])
            #expect(report["client"] as? String == (executor == "loop" ? "websocketstreams+loop+latency" : "websocketstreams+latency"))
        }
    }

    @Test("the hand-off floor under W1 (no server)")
    func handoffFloor() async throws {
        let report = try await runBench(["--workload", "handoff", "--count", "50"])
        try expectComplete(report, workload: "handoff", count: 50, figures: ["rtt_per_s", "p50_us", "p99_us"])
    }

    @Test("W2 pipelined echo")
    func pipelined() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W2", "--url", server.url(path: "/echo"), "--count", "50", "--size", "100", "--inflight", "8"])
            try expectComplete(report, workload: "W2", count: 50, figures: ["msgs_per_s", "mb_per_s"])
        }
    }

    @Test("W3 large messages")
    func large() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W3", "--url", server.url(path: "/echo"), "--count", "2", "--size", "300000"])
            try expectComplete(report, workload: "W3", count: 2, figures: ["msgs_per_s", "mb_per_s"])
        }
    }

    @Test("W4 server push")
    func push() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W4", "--url", server.url(path: "/push?count=100&size=64"), "--count", "100"])
            try expectComplete(report, workload: "W4", count: 100, figures: ["msgs_per_s", "mb_per_s"])
        }
    }

    @Test("W5 idle connections")
    func connections() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W5", "--url", server.url(path: "/echo"), "--connections", "6", "--inflight", "2"])
            try expectComplete(report, workload: "W5", count: 6, figures: ["open_s", "rss_per_conn_kb"])
        }
    }

    @Test("W7 scale: open, hold with keep-alive pings, close; nothing lost")
    func scale() async throws {
        try await withServer { server in
            let report = try await runBench([
                "--workload", "W7", "--url", server.url(path: "/echo"), "--connections", "20", "--inflight", "4",
                "--hold", "0.3", "--ping-interval", "0.1", "--loops", "2",
            ])
            try expectComplete(
                report, workload: "W7", count: 20,
                figures: ["open_ms_per_1000", "rss_per_conn_kb", "idle_cpu_pct", "close_ms_per_1000"])
            #expect(report["lost"] as? Int == 0)
        }
    }

    @Test("W9 talking connections: every echo byte for byte, memory, wire bytes and CPU per message")
    func talkingConnections() async throws {
        try await withServer(compression: true) { server in
            let report = try await runBench([
                "--workload", "W9", "--url", server.url(path: "/echo"), "--connections", "5", "--count", "2",
                "--period", "0.2",
            ])
            try expectComplete(
                report, workload: "W9", count: 10,
                figures: ["rss_per_conn_kb", "rss_per_conn_kb_idle", "wire_bytes_per_msg_out", "wire_bytes_per_msg_in",
                          "cpu_us_per_msg"])
            // Compressed by default: a 1 KiB JSON text takes well under its size on the wire.
            let out = try #require(report["wire_bytes_per_msg_out"] as? Double)
            #expect(out > 0 && out < 700, "\(out) bytes per message")
        }
    }

    @Test("W6 fan-in")
    func fanIn() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "W6", "--url", server.url(path: "/push?count=20&size=64"), "--count", "20", "--connections", "3"])
            try expectComplete(report, workload: "W6", count: 60, figures: ["msgs_per_s", "mb_per_s"])
        }
    }

    @Test("autobahn echo client: echoes until the peer closes, then exits")
    func autobahnEcho() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "autobahn", "--url", server.url(path: "/close?code=1000&after=200")])
            #expect(report["ok"] as? Bool == true)
            #expect(report["close_code"] as? Int == 1000)
        }
    }

    /// Connection churn in a process of its own (so other tests' sockets do not count):
    /// descriptors come back to where they were and memory stays within a small constant.
    @Test("churn: 300 connect/echo/close cycles leave descriptors and memory where they were")
    func churn() async throws {
        try await withServer { server in
            let report = try await runBench(["--workload", "churn", "--url", server.url(path: "/echo"), "--count", "300"])
            #expect(report["ok"] as? Bool == true)
            #expect(report["completed"] as? Int == 300)
            let fdsBefore = try #require(report["fds_before"] as? Int)
            let fdsAfter = try #require(report["fds_after"] as? Int)
            let rssBefore = try #require(report["rss_before_kb"] as? Int)
            let rssAfter = try #require(report["rss_after_kb"] as? Int)
            print("churn 300: fds \(fdsBefore) -> \(fdsAfter), RSS \(rssBefore) KiB -> \(rssAfter) KiB")
            #expect(fdsAfter - fdsBefore <= 2)
            // AddressSanitizer keeps freed memory in quarantine, and ThreadSanitizer adds shadow
            // memory and history for what was touched: RSS says nothing under either.
            let environment = ProcessInfo.processInfo.environment
            if environment["ASAN_OPTIONS"] == nil, environment["WEBSOCKETSTREAMS_SANITIZED"] == nil {
                #expect(rssAfter - rssBefore < 4 * 1024)
            }
        }
    }

    @Test("a refused connection reports ok: false with the error, and exits 1")
    func refused() async throws {
        let result = try await runBenchProcess(["--workload", "W1", "--url", "ws://127.0.0.1:1/echo", "--count", "1"])
        #expect(result.status == 1)
        let report = try parse(result.stdout)
        #expect(report["ok"] as? Bool == false)
        #expect((report["error"] as? String)?.contains("connect failed") == true)
    }

    // MARK: - Support

    private func withServer(compression: Bool = false, _ body: (TestServer) async throws -> Void) async throws {
        let server = try await TestServer.start(compression: compression)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func expectComplete(
        _ report: [String: Any], workload: String, count: Int, figures: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(report["client"] is String, sourceLocation: sourceLocation)
        #expect(report["workload"] as? String == workload, sourceLocation: sourceLocation)
        #expect(report["ok"] as? Bool == true, "\(report)", sourceLocation: sourceLocation)
        #expect(report["count"] as? Int == count, sourceLocation: sourceLocation)
        #expect(report["completed"] as? Int == count, sourceLocation: sourceLocation)
        #expect((report["elapsed_s"] as? Double).map { $0 >= 0 } == true, sourceLocation: sourceLocation)
        for figure in figures {
            #expect(report[figure] is Double || report[figure] is Int, "missing \(figure) in \(report)", sourceLocation: sourceLocation)
        }
    }

    private func runBench(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await runBenchProcess(arguments + ["--time-limit", "10"])
        #expect(result.status == 0, "wsbench exited \(result.status): \(result.stdout) \(result.stderr)")
        return try parse(result.stdout)
    }

    private func parse(_ stdout: String) throws -> [String: Any] {
        let lines = stdout.split(separator: "\n")
        #expect(lines.count == 1, "wsbench printed \(lines.count) lines: \(stdout)")
        let line = try #require(lines.last)
        return try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }
}

/// What a finished `wsbench` run printed.
struct BenchRun: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the `wsbench` built next to this test bundle, killing it after 30 s.
func runBenchProcess(_ arguments: [String]) async throws -> BenchRun {
    let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let executable = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("wsbench")
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read the pipes to the end off the cooperative pool (the reads block), then reap.
    // wsbench writes at most a line or two to stderr, so reading it second cannot stall it.
    let output = await withCheckedContinuation { (continuation: CheckedContinuation<(Data, Data), Never>) in
        Thread.detachNewThread {
            let killer = DispatchWorkItem { process.terminate() }
            DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
            let outBytes = stdout.fileHandleForReading.readDataToEndOfFile()
            let errorBytes = stderr.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            killer.cancel()
            continuation.resume(returning: (outBytes, errorBytes))
        }
    }
    return BenchRun(
        status: process.terminationStatus,
        stdout: String(decoding: output.0, as: UTF8.self),
        stderr: String(decoding: output.1, as: UTF8.self))
}
