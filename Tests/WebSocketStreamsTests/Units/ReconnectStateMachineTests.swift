import Foundation
import Testing
@testable import WebSocketStreams

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    @Test("delay caps grow exponentially up to maxDelay; full jitter stays within the cap")
    func caps() {
        let policy = ReconnectPolicy()
        #expect(policy.delayCap(afterAttempt: 1) == .milliseconds(500))
        #expect(policy.delayCap(afterAttempt: 2) == .seconds(1))
        #expect(policy.delayCap(afterAttempt: 4) == .seconds(4))
        #expect(policy.delayCap(afterAttempt: 20) == .seconds(30))
        #expect(policy.delayCap(afterAttempt: 10_000) == .seconds(30))
        #expect(policy.delay(afterAttempt: 3, random: 0) == .zero)
        #expect(policy.delay(afterAttempt: 3, random: 1) == .seconds(2))
        #expect(policy.delay(afterAttempt: 3, random: 0.25) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(7), random: 0.5) == .seconds(7))
    }

    @Test("what is retried and what is fatal", arguments: [
        (WebSocketError.connectionFailed("refused"), "retry"),
        (.timedOut, "retry"),
        (.pongTimeout, "retry"),
        (.closed(code: .abnormalClosure, reason: ""), "retry"),
        (.closed(code: .goingAway, reason: ""), "retry"),
        (.closed(code: .internalServerError, reason: ""), "retry"),
        (.closed(code: .serviceRestart, reason: ""), "retry"),
        (.closed(code: .tryAgainLater, reason: ""), "retry"),
        (.closed(code: 4000, reason: ""), "retry"),
        (.handshakeRejected(status: 503, headers: [:], body: Data()), "retry"),
        (.handshakeRejected(status: 429, headers: [:], body: Data()), "retry"),
        (.handshakeRejected(status: 408, headers: [:], body: Data()), "retry"),
        (.handshakeRejected(status: 401, headers: [:], body: Data()), "fail"),
        (.handshakeRejected(status: 403, headers: [:], body: Data()), "fail"),
        (.handshakeRejected(status: 404, headers: [:], body: Data()), "fail"),
        (.tlsFailure("expired"), "fail"),
        (.invalidURL("x"), "fail"),
        (.closed(code: .policyViolation, reason: ""), "fail"),
        (.closed(code: .protocolError, reason: ""), "fail"),
        (.protocolViolation(closeCode: .protocolError, reason: "a frame has RSV2 set"), "fail"),
        (.closed(code: .unsupportedData, reason: ""), "fail"),
        (.closed(code: .invalidFramePayloadData, reason: ""), "fail"),
        (.closed(code: .messageTooBig, reason: ""), "fail"),
        (.messageTooLarge(limit: 10), "fail"),
        (.closed(code: .normalClosure, reason: ""), "complete"),
    ])
    func classification(error: WebSocketError, expected: String) {
        let decision = ReconnectPolicy().decision(for: error, uptime: .seconds(1))
        switch (decision, expected) {
        case (.retry, "retry"), (.fail, "fail"), (.complete, "complete"): break
        default: Issue.record("\(error): \(decision), expected \(expected)")
        }
    }

    @Test("Retry-After is honoured; a 1000 close is retried only when asked; 1012-1014 are retried, 1002 never")
    func specialCases() {
        var policy = ReconnectPolicy()
        #expect(policy.decision(for: .handshakeRejected(status: 503, headers: ["Retry-After": " 12 "], body: Data()), uptime: nil) == .retry(retryAfter: .seconds(12)))
        policy.reconnectAfterNormalClosure = true
        #expect(policy.decision(for: .closed(code: .normalClosure, reason: ""), uptime: .seconds(1)) == .retry(retryAfter: nil))
        for code in [1012, 1013, 1014] as [UInt16] {
            #expect(policy.decision(for: .closed(code: WebSocketCloseCode(rawValue: code), reason: ""), uptime: .seconds(1)) == .retry(retryAfter: nil))
        }
        #expect(policy.decision(for: .closed(code: .protocolError, reason: ""), uptime: .seconds(60)) == .fail)
        #expect(policy.decision(for: .closed(code: .protocolError, reason: ""), uptime: nil) == .fail)
        #expect(policy.decision(for: .proxyRejected(status: 407, headers: [:]), uptime: nil) == .fail)
        #expect(policy.decision(for: .proxyRejected(status: 502, headers: [:]), uptime: nil) == .retry(retryAfter: nil))
    }
}

@Suite("ReconnectStateMachine (no I/O)")
struct ReconnectStateMachineTests {
    private let start = ContinuousClock.now

    @Test("failed attempts back off with growing caps and fail after maxAttempts")
    func backoffAndMaxAttempts() {
        var policy = ReconnectPolicy()
        policy.maxAttempts = 3
        var machine = ReconnectStateMachine(policy: policy)
        do {
            let result = machine.start()
            #expect(result == .connect(attempt: 1))
        }
        let refused = WebSocketError.connectionFailed("refused")
        do {
            let result = machine.attemptFailed(refused, random: 1)
            #expect(result == .wait(.milliseconds(500), cause: refused))
        }
        #expect(machine.state == .reconnecting(after: .milliseconds(500), cause: refused))
        do {
            let result = machine.retryDue()
            #expect(result == .connect(attempt: 2))
        }
        do {
            let result = machine.attemptFailed(refused, random: 1)
            #expect(result == .wait(.seconds(1), cause: refused))
        }
        do {
            let result = machine.retryDue()
            #expect(result == .connect(attempt: 3))
        }
        do {
            let result = machine.attemptFailed(refused, random: 1)
            #expect(result == .finish(.failed(refused)))
        }
        #expect(machine.isFinished)
    }

    @Test("only a connection that stayed up for minimumUptime resets the attempt count")
    func minimumUptime() {
        var machine = ReconnectStateMachine(policy: ReconnectPolicy())
        _ = machine.start()
        let dropped = WebSocketError.closed(code: .abnormalClosure, reason: "")
        // Short-lived connections keep counting up: 0.5 s, 1 s, 2 s caps.
        for expected in [Duration.milliseconds(500), .seconds(1), .seconds(2)] {
            machine.connected(subprotocol: nil, at: start)
            do {
                let result = machine.connectionEnded(dropped, at: start + .seconds(1), random: 1)
                #expect(result == .wait(expected, cause: dropped))
            }
            _ = machine.retryDue()
        }
        // A stable one resets: the next retry is within the initial delay again, attempt 1.
        machine.connected(subprotocol: "chat", at: start)
        #expect(machine.state == .connected(subprotocol: "chat"))
        do {
            let result = machine.connectionEnded(dropped, at: start + .seconds(6), random: 1)
            #expect(result == .wait(.milliseconds(500), cause: dropped))
        }
        do {
            let result = machine.retryDue()
            #expect(result == .connect(attempt: 1))
        }
    }

    @Test("fatal errors and normal closure end the socket")
    func terminalDecisions() {
        var fatal = ReconnectStateMachine(policy: ReconnectPolicy())
        _ = fatal.start()
        let unauthorized = WebSocketError.handshakeRejected(status: 401, headers: [:], body: Data())
        do {
            let result = fatal.attemptFailed(unauthorized, random: 0.5)
            #expect(result == .finish(.failed(unauthorized)))
        }

        var normal = ReconnectStateMachine(policy: ReconnectPolicy())
        _ = normal.start()
        normal.connected(subprotocol: nil, at: start)
        do {
            let result = normal.connectionEnded(.closed(code: .normalClosure, reason: "bye"), at: start, random: 0.5)
            #expect(result == .finish(.completed))
        }
    }

    @Test("an end requested by the user wins over any retry")
    func requestedEnd() {
        var machine = ReconnectStateMachine(policy: ReconnectPolicy())
        _ = machine.start()
        machine.connected(subprotocol: nil, at: start)
        do {
            let result = machine.requestEnd(.completed)
            #expect(result)
        }
        do {
            let result = machine.requestEnd(.cancelled)
            #expect(!result)
        }
        let dropped = WebSocketError.closed(code: .abnormalClosure, reason: "")
        do {
            let result = machine.connectionEnded(dropped, at: start, random: 0.5)
            #expect(result == .finish(.completed))
        }
        #expect(machine.state == .completed)

        var idle = ReconnectStateMachine(policy: ReconnectPolicy())
        do {
            let result = idle.requestEnd(.cancelled)
            #expect(result)
        }
        #expect(idle.state == .cancelled)
        do {
            let result = idle.start()
            #expect(result == .finish(.cancelled))
        }
    }

}

@Suite("ReconnectPolicy as users write it")
struct ReconnectPolicyInitTests {
    @Test("the initializer takes every knob by label, with the documented defaults")
    func labelledInitializer() {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(200), maxAttempts: 10)
        #expect(policy.initialDelay == .milliseconds(200))
        #expect(policy.maxAttempts == 10)
        #expect(policy.multiplier == 2)
        #expect(policy.maxDelay == .seconds(30))
        #expect(policy.minimumUptime == .seconds(5))
        #expect(!policy.reconnectAfterNormalClosure)
        #expect(policy.maxQueuedMessages == 1000)
        #expect(policy.maxQueuedBytes == 8 * 1024 * 1024)
        #expect(ReconnectPolicy() == ReconnectPolicy(initialDelay: .milliseconds(500)))
    }

    @Test("a state's delay reads in seconds to the hundredth")
    func stateDescription() {
        let state = ReconnectingWebSocket.State.reconnecting(after: .nanoseconds(192_309_691), cause: .timedOut)
        #expect(state.description == "reconnecting after 0.19 seconds (timed out waiting for the opening handshake)")
        #expect(ReconnectingWebSocket.State.reconnecting(after: .seconds(12), cause: .timedOut).description.hasPrefix("reconnecting after 12.00 seconds"))
    }
}
