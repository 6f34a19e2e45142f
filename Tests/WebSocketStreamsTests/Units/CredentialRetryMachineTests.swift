import Foundation
import Testing
@testable import WebSocketStreams

@Suite("ReconnectStateMachine with a prepare hook (no I/O)")
struct CredentialRetryMachineTests {
    private let unauthorized = WebSocketError.handshakeRejected(status: 401, headers: [:], body: Data())
    private let forbidden = WebSocketError.handshakeRejected(status: 403, headers: [:], body: Data())

    @Test("a 401 is retried at once, once; the second in a row is decided by the policy")
    func unauthorizedOnce() {
        var machine = ReconnectStateMachine(policy: ReconnectPolicy(), refreshesCredentials: true)
        #expect(machine.start() == .connect(attempt: 1))
        #expect(machine.attemptNumber == 1)
        #expect(machine.previousError == nil)
        #expect(machine.attemptFailed(unauthorized, random: 1) == .connect(attempt: 2))
        #expect(machine.attemptNumber == 2)
        #expect(machine.previousError == unauthorized)
        #expect(machine.attemptFailed(forbidden, random: 1) == .finish(.failed(forbidden)))
    }

    @Test("without a prepare hook a 401 fails at once, as before")
    func withoutPrepare() {
        var machine = ReconnectStateMachine(policy: ReconnectPolicy())
        _ = machine.start()
        #expect(machine.attemptFailed(unauthorized, random: 1) == .finish(.failed(unauthorized)))
    }

    @Test("a connection in between, or another failure, re-arms the immediate retry")
    func reArmed() {
        var machine = ReconnectStateMachine(policy: ReconnectPolicy(), refreshesCredentials: true)
        _ = machine.start()
        #expect(machine.attemptFailed(unauthorized, random: 1) == .connect(attempt: 2))
        machine.connected(subprotocol: nil, at: .now)
        let lost = WebSocketError.closed(code: .abnormalClosure, reason: "")
        #expect(machine.connectionEnded(lost, at: .now, random: 0) == .wait(.zero, cause: lost))
        #expect(machine.previousError == lost)
        // The connection was short-lived: `attempt` (since the last stable one) counts on.
        #expect(machine.retryDue() == .connect(attempt: 3))
        #expect(machine.attemptNumber == 3)
        #expect(machine.attemptFailed(forbidden, random: 1) == .connect(attempt: 4))
        let refused = WebSocketError.connectionFailed("refused")
        #expect(machine.attemptFailed(refused, random: 0) == .wait(.zero, cause: refused))
        #expect(machine.retryDue() == .connect(attempt: 5))
        #expect(machine.attemptFailed(unauthorized, random: 1) == .connect(attempt: 6))
        #expect(machine.attemptNumber == 6)
    }

    @Test("the immediate retry counts against maxAttempts; a throwing prepare ends the socket")
    func limitsAndPrepareFailure() {
        var policy = ReconnectPolicy()
        policy.maxAttempts = 1
        var machine = ReconnectStateMachine(policy: policy, refreshesCredentials: true)
        _ = machine.start()
        #expect(machine.attemptFailed(unauthorized, random: 1) == .finish(.failed(unauthorized)))

        var failing = ReconnectStateMachine(policy: ReconnectPolicy(), refreshesCredentials: true)
        _ = failing.start()
        let error = WebSocketError.prepareFailed("no token")
        #expect(failing.prepareFailed(error) == .finish(.failed(error)))
        #expect(failing.state == .failed(error))
    }
}
