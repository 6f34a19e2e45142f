// `swift run -c release wssoak`: reconnecting sockets against a test server that keeps
// dropping every connection. Not part of `make test`; run it by hand for minutes or hours.
//
// Each socket sends numbered text messages at a steady rate through a ReconnectingWebSocket
// to the test server's echo route while the server drops every connection every few
// seconds. Every minute (and at the end) it prints what was sent, echoed and received by
// the server, reconnects, RSS and open file descriptors; at the end, every message sent is
// accounted for: received by the server once, or listed unsent when its socket ended. Lost
// (neither) and duplicated must stay 0; resent counts the messages a socket sent again because
// a dropped connection never had them acknowledged (websocket_client_messages_resent_total).
// A message that reached the server's socket but was still unread when the server dropped the
// connection counts as received, in its own share ("discarded at drop"): the server reads it
// out at the drop. The client's TCP saw it acknowledged, so no client can resend or report
// it; only an application-level acknowledgement would cover it.
import ArgumentParser
import Glibc
import MetricsTestKit
import Synchronization
import WebSocketStreams
import WebSocketTestServer

@main
struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wssoak",
        abstract: "Reconnecting sockets against a server that drops every connection periodically.")

    @Option(help: "How many ReconnectingWebSockets to run.")
    var sockets = 50

    @Option(help: "How long to run, in seconds (an hour by default; 600 for the 10-minute run).")
    var duration: Double = 3600

    @Option(name: .customLong("drop-every"), help: "Seconds between the server dropping every connection.")
    var dropEvery: Double = 2

    @Option(help: "Messages per second each socket sends.")
    var rate: Double = 20

    @Option(help: "Seconds between progress reports.")
    var report: Double = 60

    @Flag(help: "Run over wss:// (a TLS test server with a CA made at start).")
    var tls = false

    @Option(help: """
        Use this server (e.g. `TestServer --port 0 --drop-every 2`'s /echo URL) instead of one in \
        this process: RSS and fds are then the client's alone, but loss and duplicates cannot be \
        checked (the server's record is not here).
        """)
    var url: String?

    func validate() throws {
        guard sockets > 0, duration > 0, dropEvery > 0, rate > 0, report > 0 else {
            throw ValidationError("every option must be positive")
        }
    }

    func run() async throws {
        if let url {
            try await runClientOnly(url: url)
            return
        }
        let server = try await TestServer.start(tls: tls ? .init() : nil, compression: false, recordTexts: true)
        let ledger = Ledger()
        let metrics = TestMetrics()
        var configuration = WebSocketConfiguration()
        configuration.tls.trustedCAFile = server.caCertificateFile
        configuration.metrics.factory = metrics
        let startRSS = residentMegabytes()
        let startFDs = openDescriptors()
        print("soak: \(sockets) sockets, \(rate) msg/s each, drop every \(dropEvery) s, \(duration) s on \(server.url(path: "/echo"))")
        print("start: RSS \(startRSS) MB, \(startFDs) fds")
        let deadline = ContinuousClock.now + .seconds(duration)
        var fastPolicy = ReconnectPolicy()
        fastPolicy.initialDelay = .milliseconds(100)
        fastPolicy.maxDelay = .seconds(1)
        let policy = fastPolicy
        let (sockets, rate, dropEvery, report, fixedConfiguration) = (sockets, rate, dropEvery, report, configuration)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<sockets {
                group.addTask {
                    await Self.runSocket(
                        index, url: server.url(path: "/echo?socket=\(index)"), configuration: fixedConfiguration,
                        policy: policy, rate: rate, ledger: ledger, deadline: deadline)
                }
            }
            group.addTask {
                while ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .seconds(dropEvery))
                    await server.disconnectAll()
                    ledger.drops.add(1, ordering: .relaxed)
                }
            }
            group.addTask {
                var next = ContinuousClock.now + .seconds(report)
                while next < deadline {
                    try? await Task.sleep(until: next)
                    print(ledger.summary(server: server.snapshot) + " | RSS \(residentMegabytes()) MB, \(openDescriptors()) fds")
                    next += .seconds(report)
                }
            }
            await group.waitForAll()
        }
        // Let the last echoes and closes settle, then check the server's record.
        try? await Task.sleep(for: .seconds(2))
        let snapshot = server.snapshot
        let verdict = ledger.verify(server: snapshot)
        print(ledger.summary(server: snapshot))
        print("end: RSS \(residentMegabytes()) MB (start \(startRSS)), \(openDescriptors()) fds (start \(startFDs))")
        let resent = metrics.counterTotal(label: "websocket_client_messages_resent_total")
        print("queued while disconnected: \(verdict.queued), of them lost: \(verdict.queuedLost)")
        print("resent after a drop (never acknowledged): \(resent); reported unsent at the end: \(verdict.reported)")
        print("discarded at drop (acknowledged by the server's TCP, never read by it): \(verdict.discarded)"
            + " of \(verdict.discardedCount), partial messages cut by a drop: \(verdict.partial)")
        print("lost (neither received, nor discarded at a drop, nor reported): \(verdict.lost); duplicated: \(verdict.duplicated)")
        await server.stop()
        if verdict.lost > 0 || verdict.queuedLost > 0 || verdict.duplicated > 0 { throw ExitCode(1) }
    }

    /// `--url`: the same sockets against an outside server that does the dropping.
    private func runClientOnly(url: String) async throws {
        let ledger = Ledger(tracksQueued: false)
        let startRSS = residentMegabytes()
        let startFDs = openDescriptors()
        print("soak (client only): \(sockets) sockets, \(rate) msg/s each, \(duration) s on \(url)")
        print("start: RSS \(startRSS) MB, \(startFDs) fds")
        let deadline = ContinuousClock.now + .seconds(duration)
        var policy = ReconnectPolicy()
        policy.initialDelay = .milliseconds(100)
        policy.maxDelay = .seconds(1)
        let (sockets, rate, report, fixedPolicy) = (sockets, rate, report, policy)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<sockets {
                group.addTask {
                    await Self.runSocket(
                        index, url: url + "?socket=\(index)", configuration: WebSocketConfiguration(), policy: fixedPolicy,
                        rate: rate, ledger: ledger, deadline: deadline)
                }
            }
            group.addTask {
                var next = ContinuousClock.now + .seconds(report)
                while next < deadline {
                    try? await Task.sleep(until: next)
                    print(ledger.clientSummary() + " | RSS \(residentMegabytes()) MB, \(openDescriptors()) fds")
                    next += .seconds(report)
                }
            }
            await group.waitForAll()
        }
        print(ledger.clientSummary())
        print("end: RSS \(residentMegabytes()) MB (start \(startRSS)), \(openDescriptors()) fds (start \(startFDs))")
    }

    private static func runSocket(
        _ index: Int, url: String, configuration: WebSocketConfiguration, policy: ReconnectPolicy, rate: Double,
        ledger: Ledger, deadline: ContinuousClock.Instant
    ) async {
        let socket = ReconnectingWebSocket(to: url, configuration: configuration, policy: policy) { _ in
            ledger.connects.add(1, ordering: .relaxed)
        }
        let reader = Task {
            for await _ in socket.messages { ledger.echoed.add(1, ordering: .relaxed) }
        }
        let interval = Duration.seconds(1 / rate)
        var sequence = 0
        var next = ContinuousClock.now
        while ContinuousClock.now < deadline {
            let text = "s\(index)-\(sequence)"
            let connected: Bool
            if case .connected = socket.state { connected = true } else { connected = false }
            do {
                try socket.enqueue(.text(text))
                ledger.sent.add(1, ordering: .relaxed)
                ledger.markSent(text, queued: !connected)
            } catch {
                ledger.refused.add(1, ordering: .relaxed)
            }
            sequence += 1
            next += interval
            try? await Task.sleep(until: next)
        }
        try? await Task.sleep(for: .seconds(1))
        await socket.close()
        ledger.markReported(socket.unsentMessages)
        reader.cancel()
        await reader.value
    }
}

/// Counters and the messages queued while their socket was disconnected.
final class Ledger: Sendable {
    let sent = Atomic<Int>(0)
    let echoed = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let connects = Atomic<Int>(0)
    let drops = Atomic<Int>(0)
    private let queued = Mutex<Set<String>>([])
    private let all = Mutex<Set<String>>([])
    private let reported = Mutex<Set<String>>([])
    /// Whether queued messages are remembered for ``verify(server:)`` (not with `--url`,
    /// where the set would only add to the RSS being measured).
    let tracksQueued: Bool

    init(tracksQueued: Bool = true) {
        self.tracksQueued = tracksQueued
    }

    /// Remembers a message `enqueue` took (and whether its socket was disconnected then).
    func markSent(_ text: String, queued wasQueued: Bool) {
        guard tracksQueued else { return }
        all.withLock { _ = $0.insert(text) }
        if wasQueued { queued.withLock { _ = $0.insert(text) } }
    }

    /// Messages a socket listed as unsent when it ended.
    func markReported(_ messages: [WebSocketMessage]) {
        guard tracksQueued else { return }
        reported.withLock { reported in
            for case .text(let text) in messages { reported.insert(text) }
        }
    }

    func summary(server: TestServer.Snapshot) -> String {
        let received = server.connections.reduce(0) { $0 + $1.messagesReceived }
        let discarded = server.connections.reduce(0) { $0 + $1.messagesDiscardedAtDrop }
        return "sent \(sent.load(ordering: .relaxed)), server received \(received), discarded at drop \(discarded), "
            + "echoed back \(echoed.load(ordering: .relaxed)), "
            + "refused \(refused.load(ordering: .relaxed)), connects \(connects.load(ordering: .relaxed)), "
            + "drops \(drops.load(ordering: .relaxed)), handshakes \(server.handshakeCount)"
    }

    /// The client's counters alone (`--url`).
    func clientSummary() -> String {
        "sent \(sent.load(ordering: .relaxed)), echoed back \(echoed.load(ordering: .relaxed)), "
            + "refused \(refused.load(ordering: .relaxed)), connects \(connects.load(ordering: .relaxed))"
    }

    /// Every message sent must reach the server exactly once (read by its route, or read out
    /// of its socket when it dropped the connection) or be reported unsent when its socket
    /// ended; no message may arrive twice. `discarded` counts the sent messages found among
    /// those read out at a drop, `discardedCount` every message read out at a drop (texts
    /// or not), `partial` the drops that cut a message.
    func verify(server: TestServer.Snapshot) -> (
        queued: Int, queuedLost: Int, reported: Int, discarded: Int, discardedCount: Int, partial: Int, lost: Int,
        duplicated: Int
    ) {
        var counts: [String: Int] = [:]
        for text in server.allTextsReceived { counts[text, default: 0] += 1 }
        let discardedTexts = server.allTextsDiscardedAtDrop
        for text in discardedTexts { counts[text, default: 0] += 1 }
        let discardedCount = server.connections.reduce(0) { $0 + $1.messagesDiscardedAtDrop }
        let partial = server.connections.filter(\.partialMessageDiscardedAtDrop).count
        let duplicated = counts.values.filter { $0 > 1 }.count
        let queuedSet = queued.withLock { $0 }
        let reportedSet = reported.withLock { $0 }
        let queuedLost = queuedSet.filter { counts[$0] != 1 && !reportedSet.contains($0) }.count
        let allSet = all.withLock { $0 }
        let lost = allSet.filter { counts[$0] == nil && !reportedSet.contains($0) }.count
        let discarded = discardedTexts.filter { allSet.contains($0) }.count
        return (queuedSet.count, queuedLost, reportedSet.count, discarded, discardedCount, partial, lost, duplicated)
    }
}

func residentMegabytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 128)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
    let fields = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

func openDescriptors() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count - 3
}
