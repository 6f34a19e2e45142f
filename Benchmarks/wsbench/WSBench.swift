import ArgumentParser
import BenchmarkKit
import Glibc
import WebSocketStreams

/// `wsbench`: WebSocketStreams under load, written as a user would write it (`for await`
/// over `messages`, `send` from the task), printing one JSON line per run.
@main
struct WSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wsbench",
        abstract: "Benchmark WebSocketStreams against any WebSocket server.",
        discussion: """
            Workloads:
              W1  ping-pong: send a --size text, await its echo, repeat --count times
                  (rtt_per_s, p50_us, p99_us; nearest-rank percentiles)
              W2  pipelined echo: --count binary messages of --size, --inflight in flight
                  (msgs_per_s, mb_per_s)
              W3  large messages: like W2 with one 4 MiB message in flight
              W4  server push: receive --count messages; the URL carries the push
                  parameters, e.g. /push?count=200000&size=128
              W5  connections: open --connections idle connections, at most
                  --inflight handshakes at a time (open_s, rss_per_conn_kb)
              W6  fan-in: --connections connections each receiving --count pushes
              W7  scale: open --connections (default 10,000; --inflight handshakes at a
                  time), hold them --hold seconds with pings every --ping-interval,
                  close them (open/close time per 1,000, RSS per connection, idle CPU)
              W8  streamed: one --size message (default 1 GiB) sent in 64 KiB pieces
                  to /frame-echo while its echo is read in pieces (mb_per_s each way,
                  peak_rss_growth_mb)
              W9  talking connections: open --connections (default 1,000) with default
                  settings (compression on), then --count rounds (default 3): each
                  connection sends a --size (1 KiB) JSON text and reads its echo once
                  per --period seconds (default 10), spread evenly (rss_per_conn_kb
                  after the first round, wire_bytes_per_msg_out/_in, cpu_us_per_msg)
              autobahn  echo every message with its type until the peer closes
                  (the Autobahn|Testsuite client contract)
              asyncstream  no network: the cost of one AsyncStream element, the
                  floor under `messages` (ns_per_element; --url is ignored)
              churn  --count connect/echo/close cycles, --connections at a time
                  (default 4); open descriptors and RSS before and after
              handoff  no WebSocket: W1's hand-off from a reading thread to a task on
                  the default executor over a loopback socket to an echo thread
                  (the floor under W1 there; --url is ignored)

            The clock starts when the first connection is open (W5: when connecting
            starts). Prints one JSON line with client, workload, ok, count, completed,
            elapsed_s and the workload's figures; exits 0 when ok, 1 when not.
            """
    )

    @Option(help: "The workload: W1 to W9, autobahn, asyncstream, churn or handoff.")
    var workload: Workload

    @Option(help: "The server URL, e.g. ws://127.0.0.1:9001/echo (not used by asyncstream).")
    var url: String?

    @Option(help: "Messages (per connection for W6; connections for W5). Default per workload: W1 20000, W2 100000, W3 50, W4 200000, W5 1000, W6 2000.")
    var count: Int?

    @Option(help: "Payload bytes per message. Default: W1 32, W2 1024, W3 4194304, W4/W6 128.")
    var size: Int?

    @Option(help: "Messages in flight for W2/W3 (default 64; W3: 1); handshakes in flight for W5 (default 100).")
    var inflight: Int?

    @Option(help: "Connections for W5 (default: --count) and W6 (default: 100).")
    var connections: Int?

    @Option(name: .customLong("time-limit"), help: "Seconds before the run stops and reports what completed (ok: false). Default: 60; none for autobahn.")
    var timeLimit: Double?

    @Flag(name: [.customLong("no-compress"), .customLong("no-compression")], help: "Do not offer permessage-deflate.")
    var noCompression = false

    @Option(name: .customLong("client-max-window-bits"), help: ArgumentHelp("Offer client_max_window_bits=N (8-15); 0 offers it without a value. Default: the SDK's.", valueName: "bits"))
    var clientMaxWindowBits: Int?

    @Option(name: .customLong("server-max-window-bits"), help: ArgumentHelp("Offer server_max_window_bits=N (8-15).", valueName: "bits"))
    var serverMaxWindowBits: Int?

    @Option(name: .customLong("memory-level"), help: ArgumentHelp("zlib's memory level for compressing (1-9). Default: the SDK's.", valueName: "level"))
    var memoryLevel: Int?

    @Flag(name: .customLong("keep-compression-state"), help: "Keep zlib's state between messages (releasesMemoryWhenIdle = false).")
    var keepsCompressionState = false

    @Flag(name: .customLong("client-no-context-takeover"), help: "Offer client_no_context_takeover.")
    var clientNoContextTakeover = false

    @Flag(help: "W4/W6: read through messageBatches (every buffered message at once) instead of messages.")
    var batches = false

    @Flag(help: "W2: send distinct JSON texts (a trade feed) instead of one repeated binary payload.")
    var json = false

    @Flag(help: "autobahn: read each message in pieces as it arrives (streamsIncomingMessages) and echo it piece by piece (send(streaming:as:)).")
    var stream = false

    @Option(help: "W7: seconds to hold the connections open (default 45).")
    var hold: Double?

    @Option(help: "W9: seconds between one connection's messages (default 10).")
    var period: Double?

    @Option(name: .customLong("ping-interval"), help: "Seconds between keep-alive pings (W7 default 20; others: the SDK's default, 20).")
    var pingInterval: Double?

    @Option(help: "Event loops for the connections: 1 = one loop thread; N = a group of N. Default: the SDK's shared group (one loop per available core).")
    var loops: Int?

    @Flag(name: .customLong("latency-mode"), help: "Connections go to event loops in latency mode (WebSocketEventLoop.Configuration.lowLatency): each loop polls its sockets for --busy-poll-us before sleeping. One loop unless --loops says otherwise.")
    var latencyMode = false

    @Option(name: .customLong("busy-poll-us"), help: "With --latency-mode: microseconds a loop polls before sleeping (default: the SDK's lowLatency() default).")
    var busyPollMicroseconds: Int?

    @Option(help: "Where the workload's tasks run: 'global' (Swift's default executor) or 'loop' (the event loop's thread, via withTaskExecutorPreference; no thread hop per message).")
    var executor: ExecutorChoice = .global

    func validate() throws {
        if url == nil, workload != .asyncstream, workload != .handoff { throw ValidationError("--url is required") }
        if let count, count < 0 { throw ValidationError("--count must not be negative") }
        if let size, size < 0 { throw ValidationError("--size must not be negative") }
        if let inflight, inflight < 1 { throw ValidationError("--inflight must be at least 1") }
        if let connections, connections < 1 { throw ValidationError("--connections must be at least 1") }
        if let timeLimit, timeLimit <= 0 { throw ValidationError("--time-limit must be positive") }
        if let period, period <= 0 { throw ValidationError("--period must be positive") }
        if busyPollMicroseconds != nil, !latencyMode { throw ValidationError("--busy-poll-us needs --latency-mode") }
    }

    func run() async throws {
        if batches, workload != .w4, workload != .w6 {
            // Batches change how W4 and W6 read; for the rest, say so and measure nothing, so
            // `make bench` can run `wsbench --batches` as a column of its own (n/a elsewhere).
            let report = BenchmarkReport(
                client: BenchmarkParameters.clientName + "+batches", workload: workload.rawValue,
                ok: true, count: 0, completed: 0, elapsedSeconds: 0)
            print(report.jsonLine)
            return
        }
        ProcessResources.raiseDescriptorLimit()
        var parameters = makeParameters()
        parameters.runsOnLoop = executor == .loop
        let limit = timeLimit ?? (workload == .autobahn ? nil : workload == .w7 ? (hold ?? 45) + 120
            : workload == .w9 ? Double(count ?? 3) * (period ?? 10) + 180 : 60)
        let timeLimit = limit.map { Duration.milliseconds(Int64($0 * 1000)) }
        var report: BenchmarkReport
        switch executor {
        case .global:
            report = await Self.run(parameters, timeLimit: timeLimit)
        case .loop:
            // The first loop connections may go to (the shared loop unless --loops or
            // --latency-mode made a group): the group places the connection on it.
            report = await withTaskExecutorPreference(parameters.loops[0]) {
                await Self.run(parameters, timeLimit: timeLimit)
            }
        }
        report.client = BenchmarkParameters.clientName + (executor == .loop ? "+loop" : "") + (batches ? "+batches" : "")
            + (latencyMode ? "+latency" : "")
        print(report.jsonLine)
        // Connections closed; the shared loop's thread goes with the process.
        if !report.ok { throw ExitCode.failure }
    }

    private func makeParameters() -> BenchmarkParameters {
        let count = count ?? workload.defaultCount
        var configuration = WebSocketConfiguration()
        configuration.compression = WebSocketCompression(isEnabled: !noCompression)
        if let clientMaxWindowBits {
            configuration.compression.clientMaxWindowBits = clientMaxWindowBits == 0 ? nil : clientMaxWindowBits
        }
        if let serverMaxWindowBits { configuration.compression.serverMaxWindowBits = serverMaxWindowBits }
        if let memoryLevel { configuration.compression.memoryLevel = memoryLevel }
        if keepsCompressionState { configuration.compression.releasesMemoryWhenIdle = false }
        configuration.compression.clientNoContextTakeover = clientNoContextTakeover
        if let pingInterval {
            configuration.pingInterval = pingInterval > 0 ? .milliseconds(Int64(pingInterval * 1000)) : nil
        }
        if workload == .w3 {
            // Room for the echo of one large message, as the raw C client has.
            configuration.maxMessageSize = max(configuration.maxMessageSize, (size ?? workload.defaultSize) + 1)
        }
        return BenchmarkParameters(
            workload: workload, url: url ?? "", count: count,
            size: size ?? workload.defaultSize,
            inflight: inflight ?? (workload == .w3 ? 1 : [.w5, .w7, .w9].contains(workload) ? 100 : 64),
            connections: connections ?? workload.defaultConnections(count: count),
            configuration: configuration,
            group: makeGroup(),
            hold: .milliseconds(Int64((hold ?? 45) * 1000)), period: .milliseconds(Int64((period ?? 10) * 1000)),
            readsBatches: batches, sendsJSON: json,
            streamsMessages: stream)
    }

    /// The loops of `--loops` and `--latency-mode`; `nil` for the SDK's shared group.
    private func makeGroup() -> WebSocketEventLoopGroup? {
        guard latencyMode else { return loops.map { WebSocketEventLoopGroup(loopCount: max(1, $0), name: "wsbench-loop") } }
        let configuration = busyPollMicroseconds.map {
            WebSocketEventLoop.Configuration.lowLatency(busyPolling: .microseconds($0))
        } ?? .lowLatency()
        return WebSocketEventLoopGroup(loopCount: max(1, loops ?? 1), name: "wsbench-loop", configuration: configuration)
    }

    /// Runs the workload; when `timeLimit` passes first, cancels it and returns what it
    /// completed by then.
    static func run(_ parameters: BenchmarkParameters, timeLimit: Duration?) async -> BenchmarkReport {
        guard let timeLimit else { return await runWorkload(parameters) }
        return await withTaskGroup(of: BenchmarkReport?.self) { group in
            group.addTask { await runWorkload(parameters) }
            group.addTask {
                try? await Task.sleep(for: timeLimit)
                return nil
            }
            var report: BenchmarkReport?
            while let next = await group.next() {
                group.cancelAll()
                if let next { report = next }
            }
            return report!
        }
    }

    /// Where wsbench runs its tasks.
    enum ExecutorChoice: String, ExpressibleByArgument {
        case global
        case loop
    }

    private static func runWorkload(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        switch parameters.workload {
        case .w1: await PingPongWorkload.run(parameters)
        case .w2, .w3: await EchoWorkload.run(parameters)
        case .w4, .w6: await PushWorkload.run(parameters)
        case .w5: await IdleConnectionsWorkload.run(parameters)
        case .w7: await ScaleWorkload.run(parameters)
        case .w8: await StreamedMessageWorkload.run(parameters)
        case .w9: await TalkingConnectionsWorkload.run(parameters)
        case .autobahn: await AutobahnEchoClient.run(parameters)
        case .asyncstream: await AsyncStreamFloor.run(parameters)
        case .churn: await ChurnWorkload.run(parameters)
        case .handoff: await HandoffFloor.run(parameters)
        }
    }
}
