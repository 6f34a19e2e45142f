import Foundation
import SynchronizationSupport
import Testing
import WebSocketStreams
import WebSocketTestServer

/// What a `prepare` hook saw, one entry per call.
private final class PrepareLog: Sendable {
    struct Call: Sendable {
        let number: Int
        let url: String
        let headers: [String: String]
        let previousError: WebSocketError?
        let at: ContinuousClock.Instant
    }

    private let calls = AnnotatedMutex<[Call]>([])

    func record(_ attempt: WebSocketConnectAttempt) {
        calls.withLock {
            $0.append(Call(
                number: attempt.number, url: attempt.url, headers: attempt.headers, previousError: attempt.previousError,
                at: .now))
        }
    }

    var all: [Call] { calls.withLock { $0 } }
}

/// A policy whose backoff (full jitter, up to 30 s) is far longer than these tests take:
/// a retry that happens quickly, with no `reconnecting` state before it, did not wait.
private func slowBackoff() -> ReconnectPolicy {
    var policy = ReconnectPolicy()
    policy.initialDelay = .seconds(30)
    policy.maxDelay = .seconds(30)
    return policy
}

private func fastPolicy() -> ReconnectPolicy {
    var policy = ReconnectPolicy()
    policy.initialDelay = .milliseconds(20)
    policy.maxDelay = .milliseconds(100)
    return policy
}

/// What the token service of these tests failed with.
private struct TokenServiceDown: Error, CustomStringConvertible {
    var description: String { "the token service answered 503" }
}

@Suite("ReconnectingWebSocket prepare: fresh credentials for every attempt")
struct CredentialRefreshTests {
    @Test("every attempt presents the header prepare set for it; a drop reconnects with a new token")
    func everyAttemptHasItsOwnToken() async throws {
        try await withTestServer(compression: false) { server in
            let log = PrepareLog()
            var configuration = WebSocketConfiguration()
            configuration.headers["X-Client"] = "base"
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo?custom=x-token"), configuration: configuration, policy: fastPolicy(),
                prepare: { attempt in
                    log.record(attempt)
                    attempt.headers["X-Token"] = "token-\(attempt.number)"
                })
            var messages = socket.messages.makeAsyncIterator()
            for round in 1...3 {
                try await socket.send(.text("round \(round)"))
                #expect(await messages.next() == .text("round \(round)"))
                if round < 3 { #expect(await server.disconnectAll() == 1) }
            }
            await socket.close()

            let seen = server.snapshot.connections.map { $0.headers["x-token"] }
            #expect(seen == ["token-1", "token-2", "token-3"])
            #expect(server.snapshot.connections.allSatisfy { $0.headers["x-client"] == "base" })
            let calls = log.all
            #expect(calls.map(\.number) == [1, 2, 3])
            // What prepare set held for its attempt only: each starts from the configuration.
            #expect(calls.allSatisfy { $0.headers == ["X-Client": "base"] })
            #expect(calls.allSatisfy { $0.url == server.url(path: "/echo?custom=x-token") })
            #expect(calls[0].previousError == nil)
            #expect(calls.dropFirst().allSatisfy { $0.previousError?.code == .connectionFailed })
        }
    }

    @Test("a 401 on the first try calls prepare again at once, with the 401, and the retry skips the backoff")
    func unauthorizedRefreshesAtOnce() async throws {
        try await withTestServer(compression: false) { server in
            let log = PrepareLog()
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/reject?status=401"), policy: slowBackoff(),
                prepare: { attempt in
                    log.record(attempt)
                    if attempt.previousError?.httpStatus == 401 {
                        // A fresh token is good: the server now takes the connection.
                        attempt.url = server.url(path: "/echo?custom=x-token")
                        attempt.headers["X-Token"] = "fresh"
                    } else {
                        attempt.headers["X-Token"] = "expired"
                    }
                })
            let recorder = StateRecorder(socket)
            let started = ContinuousClock.now
            // Queued before the first attempt: the outbox survives the refusal.
            try socket.enqueue(.text("queued before the 401"))
            var messages = socket.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("queued before the 401"))
            #expect(ContinuousClock.now - started < .seconds(10), "the retry waited for the 30 s backoff")
            await socket.close()
            await recorder.finished()

            let calls = log.all
            #expect(calls.count == 2)
            #expect(calls.map(\.number) == [1, 2])
            #expect(calls.last?.previousError?.httpStatus == 401)
            #expect(calls.last?.previousError?.code == .handshakeRejected)
            #expect(!recorder.states.contains { if case .reconnecting = $0 { true } else { false } })
            #expect(server.snapshot.connections.map { $0.headers["x-token"] } == ["fresh"])
            #expect(server.snapshot.rejectedHandshakes.map(\.status) == [401])
        }
    }

    @Test("a second 401 in a row follows the policy: the socket fails with it")
    func secondUnauthorizedFollowsThePolicy() async throws {
        try await withTestServer(compression: false) { server in
            let log = PrepareLog()
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/reject?status=401"), policy: slowBackoff(),
                prepare: { attempt in log.record(attempt) })
            let recorder = StateRecorder(socket)
            try socket.enqueue(.text("never delivered"))
            await recorder.finished()
            guard case .failed(let error) = recorder.states.last else {
                Issue.record("expected failed, got \(recorder.states)")
                return
            }
            #expect(error.httpStatus == 401)
            #expect(log.all.count == 2)
            #expect(server.snapshot.rejectedHandshakes.map(\.status) == [401, 401])
            #expect(socket.unsentMessages == [.text("never delivered")])
        }
    }

    @Test("a 403 after a refresh that worked before is refreshed again, once")
    func forbiddenAfterAConnectionRefreshesAgain() async throws {
        try await withTestServer(compression: false) { server in
            let log = PrepareLog()
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"), policy: fastPolicy(),
                prepare: { attempt in
                    log.record(attempt)
                    // The second attempt (after the drop) is refused; the refresh after it works.
                    if attempt.number == 2 { attempt.url = server.url(path: "/reject?status=403") }
                })
            var messages = socket.messages.makeAsyncIterator()
            try await socket.send(.text("one"))
            #expect(await messages.next() == .text("one"))
            _ = await server.disconnectAll()
            try await socket.send(.text("two"))
            #expect(await messages.next() == .text("two"))
            await socket.close()
            #expect(log.all.map(\.number) == [1, 2, 3])
            #expect(log.all.last?.previousError?.httpStatus == 403)
        }
    }

    @Test("a prepare that throws ends the socket with its error, and fails what was queued")
    func throwingPrepareEndsTheSocket() async throws {
        try await withTestServer(compression: false) { server in
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"), policy: fastPolicy(),
                prepare: { attempt in
                    if attempt.number == 2 { throw TokenServiceDown() }
                })
            let recorder = StateRecorder(socket)
            var messages = socket.messages.makeAsyncIterator()
            try await socket.send(.text("one"))
            #expect(await messages.next() == .text("one"))
            _ = await server.disconnectAll()
            await recorder.finished()
            guard case .failed(let error) = recorder.states.last else {
                Issue.record("expected failed, got \(recorder.states)")
                return
            }
            #expect(error.code == .prepareFailed)
            #expect(error.reason == "the token service answered 503")
            #expect("\(error)".contains("the token service answered 503"))
            let sendError = await expectWebSocketError { try await socket.send(.text("after")) }
            #expect(sendError?.code == .prepareFailed)
            #expect(server.snapshot.handshakeCount == 1)
        }
    }

    @Test("a prepare that throws before the first attempt: no connection is made")
    func throwingFirstPrepare() async throws {
        try await withTestServer(compression: false) { server in
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"), prepare: { _ in throw TokenServiceDown() })
            let error = await expectWebSocketError { try await socket.send(.text("x")) }
            #expect(error?.code == .prepareFailed)
            #expect(socket.state == .failed(.prepareFailed("the token service answered 503")))
            #expect(server.snapshot.handshakeCount == 0)
        }
    }

    @Test("messages unacknowledged at a drop are sent on the next connection, with its new token")
    func outboxSurvivesARefresh() async throws {
        try await withTestServer(compression: false, recordTexts: true) { server in
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo?custom=x-token"), policy: fastPolicy(),
                prepare: { attempt in
                    attempt.headers["X-Token"] = "token-\(attempt.number)"
                    if attempt.number == 2 { attempt.url = server.url(path: "/reject?status=401") }
                })
            var messages = socket.messages.makeAsyncIterator()
            try await socket.send(.text("first"))
            #expect(await messages.next() == .text("first"))
            _ = await server.disconnectAll()
            for index in 0..<5 { try socket.enqueue(.text("queued \(index)")) }
            for index in 0..<5 { #expect(await messages.next() == .text("queued \(index)")) }
            await socket.close()
            #expect(server.snapshot.connections.map { $0.headers["x-token"] } == ["token-1", "token-3"])
            #expect(server.snapshot.allTextsReceived == ["first"] + (0..<5).map { "queued \($0)" })
        }
    }

    @Test("close() while prepare waits for a token interrupts it and ends the socket as completed")
    func closeDuringPrepare() async throws {
        try await withTestServer(compression: false) { server in
            let entered = AnnotatedMutex(false)
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"),
                prepare: { _ in
                    entered.withLock { $0 = true }
                    try await Task.sleep(for: .seconds(30))
                })
            let recorder = StateRecorder(socket)
            try socket.enqueue(.text("waiting"))
            await eventually("prepare to start") { entered.withLock { $0 } }
            let started = ContinuousClock.now
            await socket.close()
            await recorder.finished()
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(recorder.states.last == .completed)
            #expect(socket.unsentMessages == [.text("waiting")])
            #expect(server.snapshot.handshakeCount == 0)
        }
    }

    @Test("headers prepare sets are sensitive too: a redirect to another origin drops them")
    func prepareHeadersFollowTheRedirectRules() async throws {
        try await withTestServer(compression: false) { origin in
            try await withTestServer(compression: false) { other in
                let target = "ws://127.0.0.1:\(other.port)/echo"
                let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
                let socket = ReconnectingWebSocket(
                    to: origin.url(path: "/redirect?to=\(encoded)"),
                    prepare: { attempt in
                        attempt.headers["Authorization"] = "Bearer from-prepare"
                        attempt.headers["X-Test"] = "kept"
                    })
                var messages = socket.messages.makeAsyncIterator()
                try await socket.send(.text("hi"))
                #expect(await messages.next() == .text("hi"))
                await socket.close()
                let seen = try #require(other.snapshot.connections.first?.headers)
                #expect(seen["x-test"] == "kept")
                #expect(seen["authorization"] == nil)
            }
        }
    }
}
