import Synchronization
import SynchronizationSupport
import TaskLifetimes
import Foundation
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// Records a socket's states with the time each arrived.
final class StateRecorder: Sendable {
    private final class Entries: Sendable {
        let list = AnnotatedMutex<[(ContinuousClock.Instant, ReconnectingWebSocket.State)]>([])
    }

    private let entries = Entries()
    private let task: Task<Void, Never>

    init(_ socket: ReconnectingWebSocket) {
        let stream = socket.states
        let entries = self.entries
        task = Task {
            for await state in stream { entries.list.withLock { $0.append((.now, state)) } }
        }
    }

    var states: [ReconnectingWebSocket.State] { entries.list.withLock { $0.map(\.1) } }
    var timeline: [(ContinuousClock.Instant, ReconnectingWebSocket.State)] { entries.list.withLock { $0 } }

    /// Waits until the stream has finished (a terminal state).
    func finished() async { await task.value }
}

private func fastPolicy() -> ReconnectPolicy {
    var policy = ReconnectPolicy()
    policy.initialDelay = .milliseconds(50)
    policy.maxDelay = .milliseconds(400)
    policy.minimumUptime = .seconds(5)
    return policy
}

@Suite("ReconnectingWebSocket against the test server")
struct ReconnectTests {
    @Test("a dropped connection reconnects, re-runs onConnect and keeps the stream going")
    func dropMidStream() async throws {
        try await withTestServer(compression: false, recordTexts: true) { server in
            let onConnectRuns = Atomic<Int>(0)
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: fastPolicy()) { connection in
                let run = onConnectRuns.add(1, ordering: .relaxed).newValue
                try await connection.send(.text("subscribe \(run)"))
            }
            let recorder = StateRecorder(socket)
            var messages = socket.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("subscribe 1"))
            await server.disconnectAll()
            #expect(await messages.next() == .text("subscribe 2"))
            try await socket.send(.text("after the drop"))
            #expect(await messages.next() == .text("after the drop"))
            await socket.close()
            await recorder.finished()

            #expect(onConnectRuns.load(ordering: .relaxed) == 2)
            let states = recorder.states
            let connected = states.indices.filter { if case .connected = states[$0] { true } else { false } }
            #expect(connected.count == 2)
            if connected.count == 2 {
                let between = states[connected[0]...connected[1]]
                // The cause says how the connection was lost: TCP closed without a close frame.
                #expect(between.contains {
                    if case .reconnecting(_, let cause) = $0 {
                        reason(of: cause, ifCode: .connectionFailed)?.contains("without a close frame") == true
                    } else {
                        false
                    }
                })
                #expect(between.contains { if case .connecting = $0 { true } else { false } })
            }
            #expect(states.last == .completed)
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.handshakeCount == 2)
            #expect(seen.allTextsReceived == ["subscribe 1", "subscribe 2", "after the drop"])
            #expect(seen.closeCodes == [.normalClosure])
        }
    }

    @Test("messageBatches: every message in order, across a dropped connection")
    func batchesAcrossADrop() async throws {
        try await withTestServer(compression: false, recordTexts: true) { server in
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: fastPolicy())
            var batches = socket.messageBatches.makeAsyncIterator()
            for index in 0..<50 { try await socket.send(.text("first \(index)")) }
            var received: [WebSocketMessage] = []
            while received.count < 50, let batch = await batches.next() { received += batch }
            await server.disconnectAll()
            for index in 0..<50 { try await socket.send(.text("second \(index)")) }
            while received.count < 100, let batch = await batches.next() { received += batch }
            #expect(received == (0..<50).map { .text("first \($0)") } + (0..<50).map { .text("second \($0)") })
            await socket.close()
            #expect(await batches.next() == nil)
        }
    }

    @Test("close(code:reason:) sends that code and reason and ends both streams")
    func closeWithCodeAndReason() async throws {
        try await withTestServer { server in
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: fastPolicy())
            var messages = socket.messages.makeAsyncIterator()
            try await socket.send(.text("ping"))
            #expect(await messages.next() == .text("ping"))
            await socket.close(code: 4000, reason: "logging out")
            #expect(await messages.next() == nil)
            #expect(socket.state.isTerminal)
            let seen = try await server.waitUntil { $0.closeCodes.count == 1 }
            #expect(seen.closeCodes == [4000])
            #expect(seen.connections.first?.closeReasonReceived == "logging out")
        }
    }

    @Test("a server down for 3 s is retried with growing delays within the policy's bounds")
    func serverDown() async throws {
        try await withTestServer { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(100)
            policy.maxDelay = .seconds(1)
            // Read before asking: the server's 3 s start at some point after this.
            // Its own loop: the timing of attempts is what is tested, and the shared loop can
            // pause for a moment while another test's new TLS configuration builds its SSL_CTX.
            let loop = WebSocketEventLoop(name: "reconnect-down")
            let started = ContinuousClock.now
            await server.refuseConnections(for: .seconds(3))
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: policy, eventLoop: loop)
            let recorder = StateRecorder(socket)
            try await socket.send(.text("hello"))
            let connectedAt = ContinuousClock.now
            await socket.close()
            await recorder.finished()
            await loop.shutdown()

            #expect(connectedAt - started >= .seconds(3), "\(recorder.timeline.map { ($0.0 - started, $0.1) })")
            // Dropped at accept, an attempt usually fails as connectionFailed; on a loaded
            // machine it can also be timedOut. Either way it is retried with the next delay.
            // `states` starts with the current state, so on a slow start the recording may
            // begin after `connecting(1)`: each delay is paired with the attempt before it.
            var attempts: [Int] = []
            var delays: [(attempt: Int, delay: Duration, cause: WebSocketError)] = []
            for state in recorder.states {
                switch state {
                case .connecting(let attempt): attempts.append(attempt)
                case .reconnecting(let delay, let cause): delays.append((attempts.last ?? 1, delay, cause))
                default: break
                }
            }
            #expect(delays.count >= 3, "attempts while down: \(delays.map { "\($0.cause)" }); timeline: \(recorder.timeline.map { ($0.0 - started, $0.1) })")
            #expect(delays.count <= 40)
            for (attempt, delay, _) in delays {
                #expect(delay <= policy.delayCap(afterAttempt: attempt), "attempt \(attempt): \(delay)")
            }
            // The caps grow: attempt numbers keep counting up, one by one, while the server is down.
            let first = try #require(attempts.first)
            #expect(first <= 2)
            #expect(attempts == Array(first..<(first + attempts.count)))
        }
    }

    @Test("100 messages queued while the server is down arrive once and in order after reconnecting")
    func queuedWhileDown() async throws {
        try await withTestServer(compression: false, recordTexts: true) { server in
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: fastPolicy())
            try await socket.send(.text("first"))
            // `send` returns once the connection accepted it; let it reach the server before the
            // drop (a message written to a socket that then drops may or may not arrive).
            _ = try await server.waitUntil { $0.allTextsReceived == ["first"] }
            await server.refuseConnections(for: .milliseconds(600))
            await server.disconnectAll()
            await eventually("the socket to notice the drop") {
                if case .connected = socket.state { return false }
                return true
            }
            for index in 0..<100 { try socket.enqueue(.text("queued \(index)")) }
            let seen: TestServer.Snapshot
            do {
                seen = try await server.waitUntil(timeout: .seconds(5)) { $0.allTextsReceived.count >= 101 }
            } catch {
                let snapshot = server.snapshot
                Issue.record("state \(socket.state), queued \(socket.storage.queuedCount), handshakes \(snapshot.handshakeCount), texts \(snapshot.allTextsReceived.count)")
                throw error
            }
            #expect(seen.allTextsReceived == ["first"] + (0..<100).map { "queued \($0)" })
            #expect(seen.handshakeCount == 2)
            await socket.close()
        }
    }

    @Test("a server that accepts and closes at once gets backoff, not a storm: each retry waits for the socket's clock")
    func acceptThenClose() async throws {
        try await withTestServer { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            policy.maxDelay = .seconds(2)
            let clock = ManualClock()
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/close?code=1011&after=0"), policy: policy, clock: clock)
            let recorder = StateRecorder(socket)
            let consumer = Task { for await _ in socket.messages {} }
            func attempts() -> Int { recorder.states.filter { if case .connecting = $0 { true } else { false } }.count }
            for attempt in 1...6 {
                // The attempt fails at once; the socket then sleeps its backoff on the clock,
                // and no further attempt starts until the clock is moved past it.
                await eventually("backoff after attempt \(attempt)") { clock.sleeperCount == 1 }
                #expect(attempts() == attempt)
                guard let delay = clock.nextDeadline else { break }
                // Never reset: each short-lived connection counts as another failure, so the
                // cap doubles (20, 40, 80, ... ms).
                #expect(delay <= policy.delayCap(afterAttempt: attempt), "attempt \(attempt): \(delay)")
                clock.advance(by: delay)
            }
            await eventually("the seventh attempt") { attempts() == 7 }
            consumer.cancel()
            await consumer.value
            await recorder.finished()
            #expect(recorder.states.last == .cancelled)
            #expect(server.snapshot.handshakeCount == 7)
        }
    }


    @Test("a 401 fails at once without retrying")
    func unauthorizedIsFatal() async throws {
        try await withTestServer { server in
            let socket = ReconnectingWebSocket(to: server.url(path: "/reject?status=401"), policy: fastPolicy())
            let recorder = StateRecorder(socket)
            await recorder.finished()
            guard case .failed(let failure) = recorder.states.last,
                  let rejected = matching(failure, .handshakeRejected), let status = rejected.httpStatus,
                  let headers = rejected.headers else {
                Issue.record("expected failed(handshakeRejected), got \(recorder.states)")
                return
            }
            #expect(status == 401)
            #expect(headers["WWW-Authenticate"] != nil)
            #expect(server.snapshot.rejectedHandshakes.count == 1)
            let error = await expectWebSocketError { try await socket.send(.text("x")) }
            #expect(error == .handshakeRejected(status: 401, headers: headers, body: Data("rejected by the test server".utf8)))
        }
    }

    @Test("a peer's normal close completes the socket; close() fails queued sends")
    func normalClosure() async throws {
        try await withTestServer { server in
            let socket = ReconnectingWebSocket(to: server.url(path: "/close?code=1000&reason=bye&after=20"), policy: fastPolicy())
            var count = 0
            for await _ in socket.messages { count += 1 }
            #expect(count == 0)
            #expect(socket.state == .completed)
            #expect(server.snapshot.handshakeCount == 1)
            let error = await expectWebSocketError { try await socket.send(.text("late")) }
            #expect(error == .closed(code: .normalClosure, reason: ""))
        }
    }

    @Test("close() fails sends still waiting for a connection")
    func closeFailsQueuedSends() async throws {
        try await withTestServer { server in
            await server.refuseConnections(for: .seconds(10))
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: fastPolicy())
            let sender = Task { try await socket.send(.text("never")) }
            await eventually("the send to be queued") { socket.storage.queuedCount == 1 }
            await socket.close()
            let result = await sender.result
            guard case .failure(let error as WebSocketError) = result else {
                Issue.record("the queued send should fail, got \(result)")
                return
            }
            #expect(error == .closed(code: .normalClosure, reason: ""))
            #expect(socket.state == .completed)
        }
    }

    @Test("cancelling during a backoff sleep ends everything promptly")
    func cancelDuringBackoff() async throws {
        let loop = WebSocketEventLoop(name: "reconnect-cancel")
        try await withTestServer { server in
            await server.refuseConnections(for: .seconds(30))
            var policy = ReconnectPolicy()
            policy.initialDelay = .seconds(20)
            let socket = ReconnectingWebSocket(to: server.url(path: "/echo"), policy: policy, eventLoop: loop)
            let recorder = StateRecorder(socket)
            let consumer = Task { for await _ in socket.messages {} }
            await eventually("a backoff") {
                recorder.states.contains { if case .reconnecting = $0 { true } else { false } }
            }
            let cancelledAt = ContinuousClock.now
            consumer.cancel()
            await consumer.value
            await recorder.finished()
            #expect(ContinuousClock.now - cancelledAt < .seconds(2))
            #expect(recorder.states.last == .cancelled)
            #expect(await loop.liveConnectionCount() == 0)
        }
        await loop.shutdown()
    }

    @Test("switching a TaskScope's id closes the old socket before the new handshake")
    func sessionScope() async throws {
        try await withTestServer { server in
            let scope = TaskScope<String>()
            for user in ["alice", "bob", "carol"] {
                await scope.task(id: user) {
                    let socket = ReconnectingWebSocket(to: server.url(path: "/echo?user=\(user)"))
                    for await _ in socket.messages {}
                }
                _ = try await server.waitUntil { $0.connections.contains { $0.query["user"] == user } }
            }
            await scope.cancel()
            let seen = try await server.waitUntil { $0.closeCodes.count == 3 }
            #expect(seen.connections.map { $0.query["user"] } == ["alice", "bob", "carol"])
            for (old, new) in zip(seen.connections, seen.connections.dropFirst()) {
                guard let closed = old.closeReceivedAt else {
                    Issue.record("connection \(old.id) got no close frame")
                    continue
                }
                #expect(closed < new.openedAt, "\(old.query) closed after \(new.query) opened")
                #expect(old.closeCodeReceived == .goingAway || old.closeCodeReceived == .normalClosure)
            }
        }
    }
}

@Suite("WebSocketProtocol: one piece of code for both socket kinds")
struct WebSocketProtocolTests {
    /// Written once against the protocol: echo, the subprotocol, a ping, a normal close.
    private func exercise(_ socket: some WebSocketProtocol, _ text: String) async throws -> (WebSocketMessage?, String?) {
        try await socket.send(.text(text))
        var messages = socket.messages.makeAsyncIterator()
        let reply = await messages.next()
        let subprotocol = socket.subprotocol
        #expect(try await socket.ping() < .seconds(5))
        // Closed while the iteration is still alive: 1000, not the 1001 of an ended loop.
        await socket.close()
        return (reply, subprotocol)
    }

    @Test("a WebSocket and a ReconnectingWebSocket run the same generic code")
    func genericOverBoth() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.subprotocols = ["chat"]
            let direct = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let (directReply, directSubprotocol) = try await exercise(direct, "direct")
            #expect(directReply == .text("direct"))
            #expect(directSubprotocol == "chat")
            #expect(direct.closeCode == .normalClosure)

            let resilient = ReconnectingWebSocket(to: server.url(path: "/echo"), configuration: configuration)
            let (resilientReply, resilientSubprotocol) = try await exercise(resilient, "resilient")
            #expect(resilientReply == .text("resilient"))
            #expect(resilientSubprotocol == "chat")
            #expect(resilient.unsentMessages.isEmpty)
            #expect(resilient.state == .completed)
            let seen = try await server.waitUntil { $0.closeCodes.count == 2 }
            #expect(seen.closeCodes == [.normalClosure, .normalClosure])
        }
    }

    @Test("ping on a ReconnectingWebSocket that is not connected says so")
    func pingWhileDisconnected() async throws {
        let socket = ReconnectingWebSocket(to: "ws://127.0.0.1:9/unused")
        await #expect(throws: WebSocketError.self) { _ = try await socket.ping() }
        await socket.close()
    }
}
