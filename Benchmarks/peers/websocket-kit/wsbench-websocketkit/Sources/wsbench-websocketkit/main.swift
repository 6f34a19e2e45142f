// wsbench-websocketkit: the wsbench workloads written on vapor/websocket-kit, as a peer
// for `make bench`. Same command line and JSON line as wsbench-c (Benchmarks/wsbench-c):
//
//   wsbench-websocketkit --workload W1..W6 --url ws[s]://HOST:PORT/PATH [--count N]
//       [--size BYTES] [--inflight K] [--connections C] [--time-limit S]
//
// Written as a user of websocket-kit writes a client: `WebSocket.connect(to:on:)` on a
// MultiThreadedEventLoopGroup of one thread, `onText` / `onBinary` callbacks, `send` from
// them. wss:// trusts the CA file named by SSL_CERT_FILE (NIOSSL does not read that variable
// itself) and verifies the chain and the host name (for an IP literal: the IP address SAN).
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import WebSocketKit

// MARK: Command line

struct Options {
    var workload = 0
    var url = ""
    var count = -1
    var size = -1
    var inflight = 64
    var connections = -1
    var timeLimit = 60.0
}

func usage() -> Never {
    FileHandle.standardError.write(Data((
        "usage: wsbench-websocketkit --workload W1..W6 --url ws[s]://HOST[:PORT]/PATH [--count N] [--size BYTES]"
        + " [--inflight K] [--connections C] [--time-limit S]\n").utf8))
    exit(2)
}

func parseOptions(_ arguments: [String]) -> Options {
    var options = Options()
    var workload: String?
    var index = 0
    func value() -> String {
        index += 1
        guard index < arguments.count else { usage() }
        return arguments[index]
    }
    func number(_ text: String) -> Int {
        guard let number = Int(text) else { usage() }
        return number
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--workload": workload = value()
        case "--url": options.url = value()
        case "--count": options.count = number(value())
        case "--size": options.size = number(value())
        case "--inflight": options.inflight = number(value())
        case "--connections": options.connections = number(value())
        case "--time-limit":
            guard let seconds = Double(value()), seconds > 0 else { usage() }
            options.timeLimit = seconds
        default: usage()
        }
        index += 1
    }
    guard let workload, workload.count == 2, workload.first == "W", let n = Int(workload.dropFirst()), (1...6).contains(n),
          options.url.hasPrefix("ws://") || options.url.hasPrefix("wss://")
    else { usage() }
    // The defaults of wsbench-c.
    let defaultCount = [0, 20_000, 100_000, 50, 200_000, 1_000, 2_000]
    let defaultSize = [0, 32, 1024, 4 * 1024 * 1024, 128, 0, 128]
    options.workload = n
    if options.count < 0 { options.count = defaultCount[n] }
    if options.size < 0 { options.size = defaultSize[n] }
    if options.connections < 0 { options.connections = n == 5 ? options.count : n == 6 ? 100 : 1 }
    return options
}

// MARK: Measuring

func nowNanoseconds() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

func residentKilobytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// Nearest-rank percentile of sorted values, as wsbench and wsbench-c compute it.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = min(max(Int((p * Double(sorted.count) / 100 - 1e-9).rounded(.up)), 1), sorted.count)
    return sorted[rank - 1]
}

/// One run's state. Everything but `init` runs on the group's one event loop (every
/// callback of websocket-kit does), so the fields need no lock.
final class Run: @unchecked Sendable {
    let options: Options
    let loop: any EventLoop
    let finished: EventLoopPromise<Void>
    let payload: ByteBuffer
    let text: String
    var sockets: [WebSocket] = []
    var open = 0
    var failed = 0
    var sent = 0
    var completed = 0
    var receivedBytes = 0
    var start: UInt64?
    var end: UInt64?
    var sentAt: UInt64 = 0
    var rttMicroseconds: [Double] = []
    var error: String?

    init(options: Options, loop: any EventLoop) {
        self.options = options
        self.loop = loop
        finished = loop.makePromise(of: Void.self)
        payload = ByteBuffer(repeating: UInt8(ascii: "x"), count: options.size)
        text = String(repeating: "x", count: options.size)
        if options.workload == 1 { rttMicroseconds.reserveCapacity(options.count) }
    }

    /// Messages (W5: connections) the run waits for.
    var target: Int {
        switch options.workload {
        case 5: options.connections
        case 6: options.count * options.connections
        default: options.count
        }
    }

    var isDone: Bool {
        options.workload == 5 ? open + failed >= options.connections : completed >= target
    }

    func finishIfDone() {
        if end == nil, isDone { finish() }
    }

    func finish() {
        if end == nil { end = nowNanoseconds() }
        finished.succeed(())
    }

    func fail(_ reason: String) {
        if error == nil { error = reason }
    }

    // MARK: Connections

    func connectionOpened(_ socket: WebSocket) {
        sockets.append(socket)
        open += 1
        if start == nil { start = nowNanoseconds() }
        socket.onClose.whenComplete { [self] _ in
            if end == nil, options.workload != 5 {
                fail("connection closed before the run completed")
                finish()
            }
        }
        switch options.workload {
        case 1:
            socket.onText { [self] socket, _ in pong(socket) }
            sendText(socket)
        case 2, 3:
            socket.onBinary { [self] socket, message in echoed(socket, message) }
            let window = options.workload == 3 ? 1 : max(1, options.inflight)
            while sent < min(window, options.count) { sendBinary(socket) }
        case 4, 6:
            socket.onBinary { [self] _, message in pushed(message.readableBytes) }
            socket.onText { [self] _, message in pushed(message.utf8.count) }
        default:
            break
        }
        finishIfDone()
    }

    func connectionFailed(_ error: any Error) {
        failed += 1
        fail("connect failed: \(error)")
        finishIfDone()
    }

    // MARK: Workloads

    func sendText(_ socket: WebSocket) {
        sentAt = nowNanoseconds()
        sent += 1
        socket.send(text)
    }

    func sendBinary(_ socket: WebSocket) {
        sent += 1
        socket.send(payload, opcode: .binary)
    }

    /// W1: the echo of the one message in flight.
    func pong(_ socket: WebSocket) {
        completed += 1
        if completed <= options.count {
            rttMicroseconds.append(Double(nowNanoseconds() - sentAt) / 1000)
        }
        if sent < options.count { sendText(socket) }
        finishIfDone()
    }

    /// W2, W3: an echo; the next message goes out in its place.
    func echoed(_ socket: WebSocket, _ message: ByteBuffer) {
        completed += 1
        receivedBytes += message.readableBytes
        if sent < options.count { sendBinary(socket) }
        finishIfDone()
    }

    /// W4, W6: a pushed message.
    func pushed(_ bytes: Int) {
        completed += 1
        receivedBytes += bytes
        finishIfDone()
    }

    // MARK: Report

    func reportLine(connectStarted: UInt64, residentBefore: Int, residentAfter: Int) -> String {
        let stop = end ?? nowNanoseconds()
        let from = options.workload == 5 ? connectStarted : start
        let elapsed = from.map { Double(stop - $0) / 1e9 } ?? 0
        let perSecond = elapsed > 0 ? 1 / elapsed : 0
        let ok = isDone && failed == 0 && error == nil
        var fields: [(String, String)] = [
            ("client", "\"websocket-kit\""),
            ("workload", "\"W\(options.workload)\""),
            ("ok", ok ? "true" : "false"),
            ("count", "\(target)"),
            ("completed", "\(options.workload == 5 ? open : completed)"),
            ("elapsed_s", String(format: "%.6f", elapsed)),
        ]
        switch options.workload {
        case 1:
            let sorted = rttMicroseconds.sorted()
            fields += [
                ("rtt_per_s", String(format: "%.1f", Double(sorted.count) * perSecond)),
                ("p50_us", String(format: "%.1f", percentile(sorted, 50))),
                ("p99_us", String(format: "%.1f", percentile(sorted, 99))),
            ]
        case 5:
            fields += [
                ("open_s", String(format: "%.6f", elapsed)),
                ("rss_per_conn_kb", String(format: "%.2f", open > 0 ? Double(residentAfter - residentBefore) / Double(open) : 0)),
            ]
        default:
            fields += [
                ("msgs_per_s", String(format: "%.1f", Double(completed) * perSecond)),
                ("mb_per_s", String(format: "%.3f", Double(receivedBytes) * perSecond / 1e6)),
            ]
        }
        if !ok {
            let reason = error ?? "time limit reached with \(options.workload == 5 ? open : completed) of \(target) done"
            fields.append(("error", jsonString(reason)))
        }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}

func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

// MARK: Main

/// Runs the workload and prints its JSON line; returns the exit status (0 when ok).
func runBenchmark(_ options: Options) -> Int32 {
    var configuration = WebSocketClient.Configuration()
    if options.workload == 3 {
        // Room for the echo of one large message in one frame (the default is 16 KiB).
        configuration.maxFrameSize = max(configuration.maxFrameSize, options.size)
    }
    if options.url.hasPrefix("wss://") {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .fullVerification
        if let caFile = ProcessInfo.processInfo.environment["SSL_CERT_FILE"], !caFile.isEmpty {
            tls.trustRoots = .file(caFile)
        }
        configuration.tlsConfiguration = tls
    }
    let clientConfiguration = configuration

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let run = Run(options: options, loop: loop)

    @Sendable func connect(_ completion: @escaping @Sendable (Result<WebSocket, any Error>) -> Void) {
        let opened = loop.makePromise(of: WebSocket.self)
        WebSocket.connect(to: options.url, configuration: clientConfiguration, on: loop) { socket in
            opened.succeed(socket)
        }.whenFailure { error in
            opened.fail(error)
        }
        opened.futureResult.whenComplete(completion)
    }

    // W5 opens and closes one connection first, so that the event loop's and TLS's one-time
    // allocations are in the baseline (as lws's context is in wsbench-c's; wsbench does the same).
    var residentBefore = 0
    if options.workload == 5 {
        let warmUp = loop.makePromise(of: Void.self)
        connect { result in
            switch result {
            case .success(let socket): socket.close().whenComplete { _ in warmUp.succeed(()) }
            case .failure(let error): warmUp.fail(error)
            }
        }
        do {
            try warmUp.futureResult.wait()
        } catch {
            run.fail("connect failed: \(error)")
        }
        residentBefore = residentKilobytes()
    }

    let connectStarted = nowNanoseconds()
    if run.error == nil {
        loop.execute {
            for _ in 0..<options.connections {
                connect { result in
                    switch result {
                    case .success(let socket): run.connectionOpened(socket)
                    case .failure(let error): run.connectionFailed(error)
                    }
                }
            }
        }
        let limit = loop.scheduleTask(in: .nanoseconds(Int64(options.timeLimit * 1e9))) { run.finish() }
        try? run.finished.futureResult.wait()
        limit.cancel()
    }
    let residentAfter = residentKilobytes()
    let before = residentBefore
    let line = try! loop.submit {
        run.reportLine(connectStarted: connectStarted, residentBefore: before, residentAfter: residentAfter)
    }.wait()
    print(line)
    fflush(nil)  // every stream: the line is out before the connections close

    // Close every connection; a server that does not answer the close within 5 s is not waited for.
    let closed = loop.makePromise(of: Void.self)
    loop.execute {
        let sockets = run.sockets
        sockets.forEach { $0.close(promise: nil) }
        EventLoopFuture.andAllComplete(sockets.map(\.onClose), on: loop).cascade(to: closed)
        loop.scheduleTask(in: .seconds(5)) { closed.succeed(()) }
    }
    try? closed.futureResult.wait()
    try? group.syncShutdownGracefully()
    return line.contains("\"ok\":true") ? 0 : 1
}

exit(runBenchmark(parseOptions(Array(CommandLine.arguments.dropFirst()))))
