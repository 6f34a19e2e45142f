import FoundationEssentials
import Glibc
import Synchronization
import SynchronizationSupport
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// Counts the keep-alive pings a connection sends, and when each went out.
private final class PingCounter: Sendable {
    private let sent = AnnotatedMutex<[ContinuousClock.Instant]>([])
    var value: Int { sent.withLock { $0.count } }
    var times: [ContinuousClock.Instant] { sent.withLock { $0 } }
    func observe(_ configuration: inout WebSocketConfiguration) {
        configuration.wireEventObserver = { [self] event in
            if event.kind == .pingSent {
                let now = ContinuousClock.now
                sent.withLock { $0.append(now) }
            }
        }
    }
}

/// Sends `rounds` messages, `every` apart, each answered before the next; returns when
/// each was sent.
private func chat(_ connection: WebSocket, rounds: Int, every: Duration) async throws -> [ContinuousClock.Instant] {
    var replies = connection.messages.makeAsyncIterator()
    var sent: [ContinuousClock.Instant] = []
    for round in 0..<rounds {
        sent.append(ContinuousClock.now)
        try await connection.send(.text("round \(round)"))
        #expect(await replies.next() == .text("round \(round)"))
        try await Task.sleep(for: every)
    }
    return sent
}

/// The earliest moment an `.idle` ping may go out at `ping`: an interval after the last
/// thing the connection could have received. The reply to the last message sent before the
/// ping may still be on its way, but the one before it arrived after it was sent; before
/// two messages, the handshake response, after `opened`.
private func earliestIdlePing(
    at ping: ContinuousClock.Instant, sends: [ContinuousClock.Instant], opened: ContinuousClock.Instant,
    interval: Duration
) -> ContinuousClock.Instant {
    let before = sends.filter { $0 < ping }
    return (before.count >= 2 ? before[before.count - 2] : opened) + interval
}

@Suite("Liveness modes against the test server: idle and periodic pings, an application heartbeat, TCP settings")
struct LivenessTests {
    @Test(".idle sends no ping while replies keep arriving; .periodic pings on schedule whatever the traffic")
    func idleAndPeriodic() async throws {
        try await withTestServer { server in
            for mode in [WebSocketPingMode.idle, .periodic] {
                let pings = PingCounter()
                var configuration = WebSocketConfiguration()
                configuration.pingInterval = .milliseconds(150)
                configuration.pingMode = mode
                pings.observe(&configuration)
                let connecting = ContinuousClock.now
                let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
                let sends = try await chat(connection, rounds: 12, every: .milliseconds(50))
                #expect(connection.error == nil)
                await connection.close()
                if mode == .idle {
                    // Replies come every 50 ms or so; a ping is due only after 150 ms without
                    // one. A loaded machine may stretch a pause that long, and then a ping is
                    // allowed, but never sooner than 150 ms after the last possible reply.
                    for ping in pings.times {
                        let earliest = earliestIdlePing(
                            at: ping, sends: sends, opened: connecting, interval: .milliseconds(150))
                        #expect(ping >= earliest, "idle mode pinged \(earliest - ping) before 150 ms of silence")
                    }
                } else {
                    #expect(pings.value >= 2, "periodic mode sent \(pings.value) pings in 600 ms at 150 ms")
                }
            }
        }
    }

    @Test(".periodic finds a dead peer within interval + pongTimeout; .idle does too once the line goes quiet")
    func deadPeerFound() async throws {
        try await withTestServer { server in
            for mode in [WebSocketPingMode.idle, .periodic] {
                var configuration = WebSocketConfiguration()
                configuration.pingInterval = .milliseconds(100)
                configuration.pongTimeout = .milliseconds(200)
                configuration.pingMode = mode
                let start = ContinuousClock.now
                let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
                for await _ in connection.messages {}
                #expect(connection.error?.code == .pongTimeout)
                #expect(ContinuousClock.now - start < .seconds(5))
            }
        }
    }

    @Test("a heartbeat answered keeps the connection, its replies kept out of messages; one unanswered ends it")
    func applicationHeartbeat() async throws {
        try await withTestServer(recordTexts: true) { server in
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = nil
            configuration.heartbeat = WebSocketHeartbeat(
                message: .text(#"{"op":"ping"}"#), interval: .milliseconds(50), timeout: .milliseconds(300)
            ) { $0 == .text(#"{"op":"ping"}"#) }   // the echo route answers with the same text
            let live = try await WebSocket.connect(to: server.url(), configuration: configuration)
            let seen = try await server.waitUntil(timeout: .seconds(3)) { $0.allTextsReceived.count >= 4 }
            #expect(seen.allTextsReceived.allSatisfy { $0 == #"{"op":"ping"}"# })
            try await live.send(.text("data"))
            var messages = live.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("data"))
            #expect(live.isOpen)
            await live.close()

            let start = ContinuousClock.now
            let dead = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            for await _ in dead.messages {}
            #expect(reason(of: dead.error, ifCode: .pongTimeout)?.contains("did not reply to the application heartbeat") == true)
            // Its words name the heartbeat, not keep-alive's pings.
            #expect(dead.error?.description.contains("heartbeat") == true)
            #expect(dead.error?.description.contains("keep-alive ping") == false)
            #expect(ContinuousClock.now - start < .seconds(5))
        }
    }

    @Test("TCP_USER_TIMEOUT drops a peer that stopped reading while data waits for it, in about the timeout")
    func tcpUserTimeout() async throws {
        try await withTestServer(compression: false) { server in
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = nil
            configuration.compression = false
            configuration.tcpUserTimeout = .milliseconds(500)
            let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            let chunk = WebSocketMessage.binary(Data(repeating: 0x5A, count: 256 * 1024))
            let writer = Task {
                while true { try await connection.send(chunk) }
            }
            let start = ContinuousClock.now
            for await _ in connection.messages {}
            let elapsed = ContinuousClock.now - start
            writer.cancel()
            _ = await writer.result
            // Without the setting the kernel retries for minutes (zero-window probes the
            // stalled peer still answers); with it, the connection ends in about 0.5-1 s.
            #expect(connection.error?.code == .connectionFailed, "\(String(describing: connection.ending))")
            #expect(elapsed < .seconds(6))
        }
    }

    @Test("tcpKeepalive and tcpUserTimeout reach the socket")
    func socketOptions() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 4)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let started = try SocketConnector.start(
            .tcp(address: "127.0.0.1", port: port),
            options: SocketConnector.Options(keepalive: .seconds(9), userTimeout: .milliseconds(1500)))
        defer { close(started.descriptor) }
        func option(_ level: Int32, _ name: Int32) -> Int32 {
            var value: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(started.descriptor, level, name, &value, &size)
            return value
        }
        #expect(option(SOL_SOCKET, SO_KEEPALIVE) == 1)
        #expect(option(Int32(IPPROTO_TCP), TCP_KEEPIDLE) == 9)
        #expect(option(Int32(IPPROTO_TCP), TCP_KEEPINTVL) == 3)
        #expect(option(Int32(IPPROTO_TCP), TCP_KEEPCNT) == 3)
        #expect(option(Int32(IPPROTO_TCP), 18) == 1500)
    }
}
