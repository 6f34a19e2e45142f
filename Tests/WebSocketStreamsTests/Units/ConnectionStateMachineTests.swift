import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

@Suite("ConnectionStateMachine transitions (no I/O)")
struct ConnectionStateMachineTests {
    private func openMachine() -> ConnectionStateMachine {
        var machine = ConnectionStateMachine(configuration: WebSocketConfiguration())
        _ = machine.established(subprotocol: "chat", extensions: nil)
        _ = machine.takeRequests(now: .now)
        return machine
    }

    @Test("sends before the handshake fail; after it, one wake-up serves a burst of sends")
    func sendScheduling() {
        var machine = ConnectionStateMachine(configuration: WebSocketConfiguration())
        guard case .fail = machine.send(.text("early")) else { Issue.record("send before open must fail"); return }
        _ = machine.established(subprotocol: nil, extensions: nil)
        guard case .accepted(let firstWake) = machine.send(.text("a")),
              case .accepted(let secondWake) = machine.send(.text("b")) else {
            Issue.record("sends on an open connection must be accepted")
            return
        }
        #expect(firstWake && !secondWake)
        #expect(machine.takeRequests(now: .now) == .write)
        guard case .accepted(let thirdWake) = machine.send(.text("c")) else { Issue.record(); return }
        #expect(thirdWake)
    }

    @Test("once closing, a full buffer never pauses reading (the close answer must get in) and more data is dropped")
    func closingNeverPausesReading() {
        var configuration = WebSocketConfiguration()
        configuration.maxBufferedMessages = 2
        var machine = ConnectionStateMachine(configuration: configuration)
        _ = machine.established(subprotocol: nil, extensions: nil)
        _ = machine.requestClose(code: .goingAway, reason: "")
        var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
        let paused = machine.receive(contentsOf: (0..<10).map { .text("\($0)") }, deliveries: &deliveries)
        #expect(!paused)
        #expect(machine.inboundPeakBytes == 2, "two one-byte messages buffered, the rest dropped")
        #expect(machine.inboundRoom.messages == .max)

        var open = ConnectionStateMachine(configuration: configuration)
        _ = open.established(subprotocol: nil, extensions: nil)
        #expect(open.receive(contentsOf: (0..<10).map { .text("\($0)") }, deliveries: &deliveries))
        #expect(open.inboundRoom.messages == 1)
    }

    @Test("a handshake that completes after connect was cancelled closes with 1001")
    func cancelledThenEstablished() {
        var machine = ConnectionStateMachine(configuration: WebSocketConfiguration())
        let (waiter, abortWake) = machine.cancelConnect()
        #expect(waiter == nil && abortWake)
        _ = machine.takeRequests(now: .now)
        let (resumed, closeWake, _) = machine.established(subprotocol: nil, extensions: nil)
        #expect(resumed == nil)
        #expect(closeWake)
        var batch = ConnectionStateMachine.WriteBatch()
        machine.takeWrites(budget: 100, into: &batch, now: .now)
        #expect(batch.close?.code == .goingAway)
    }

    @Test("a handshake that completes after a close was asked for while connecting fails connect and closes")
    func closedWhileConnecting() async {
        var machine = ConnectionStateMachine(configuration: WebSocketConfiguration())
        _ = machine.requestClose(code: .goingAway, reason: "")
        _ = machine.takeRequests(now: .now)
        let (_, closeWake, error) = machine.established(subprotocol: nil, extensions: nil)
        #expect(closeWake)
        #expect(error == .connectionFailed("the connection was closed before it opened"))
        var batch = ConnectionStateMachine.WriteBatch()
        machine.takeWrites(budget: 100, into: &batch, now: .now)
        #expect(batch.close?.code == .goingAway)
    }

    @Test("a local close is queued behind accepted messages and decides the close code")
    func localClose() async {
        var machine = openMachine()
        _ = machine.send(.text("last words"))
        await withUnsafeContinuation { (waiter: UnsafeContinuation<Void, Never>) in
            guard case .wait(let wake, let failed) = machine.close(code: .normalClosure, reason: "bye", waiter: waiter) else {
                Issue.record("close on an open connection waits")
                waiter.resume()
                return
            }
            #expect(!wake)  // already scheduled by the send
            #expect(failed.isEmpty)
            var batch = ConnectionStateMachine.WriteBatch()
            machine.takeWrites(budget: 1 << 20, into: &batch, now: .now)
            #expect(batch.messages == [.text("last words")])
            #expect(batch.close?.code == .normalClosure)
            guard case .fail(let error) = machine.send(.text("too late")) else { Issue.record(); return }
            #expect(error == .closed(code: .normalClosure, reason: "bye"))
            let finale = machine.transportClosed()
            #expect(finale?.closeWaiters.count == 1)
            finale?.run()
        }
        #expect(machine.ending?.closeCode == .normalClosure)
        #expect(machine.ending?.closeReason == "bye")
        #expect(machine.unsentMessages.isEmpty)
    }

    @Test("the peer's close code wins; TCP loss without one is 1006 and keeps unsent messages")
    func closeCodes() {
        var peer = openMachine()
        _ = peer.peerClosed(CloseFrame(code: 4001, reason: "kicked"), now: .now)
        _ = peer.transportClosed()
        #expect(peer.ending?.closeCode == 4001)
        #expect(peer.closedError == .closed(code: 4001, reason: "kicked"))

        var dropped = openMachine()
        _ = dropped.send(.text("never written"))
        _ = dropped.transportClosed()
        #expect(dropped.ending?.closeCode == .abnormalClosure)
        #expect(dropped.unsentMessages == [.text("never written")])
        let again = dropped.transportClosed()
        #expect(again == nil)  // only once
    }

    @Test("a failure recorded before the transport closes becomes the connection's error")
    func failures() {
        var machine = openMachine()
        machine.failed(with: .messageTooLarge(limit: 10), closeCode: .messageTooBig)
        _ = machine.transportClosed()
        #expect(machine.ending?.closeCode == .messageTooBig)
        #expect(machine.ending?.error == .messageTooLarge(limit: 10))
    }

    @Test("ending an iteration asks for a 1001 close; releasing the handle only when nobody iterates")
    func consumerLifetime() {
        var iterated = openMachine()
        iterated.streamCreated()
        let releaseWakes = iterated.handleReleased()
        let endWakes = iterated.streamReleased(wasIterated: true)
        #expect(!releaseWakes)
        #expect(endWakes)
        var batch = ConnectionStateMachine.WriteBatch()
        iterated.takeWrites(budget: 100, into: &batch, now: .now)
        #expect(batch.close?.code == .goingAway)

        var idle = openMachine()
        let idleWakes = idle.handleReleased()
        #expect(idleWakes)

        // A stream handed out but never iterated, released while the handle lives: nothing.
        var unused = openMachine()
        unused.streamCreated()
        let unusedWakes = unused.streamReleased(wasIterated: false)
        #expect(!unusedWakes)
        // ...but once the handle is gone too, the connection goes away.
        var orphan = openMachine()
        orphan.streamCreated()
        _ = orphan.handleReleased()
        let orphanWakes = orphan.streamReleased(wasIterated: false)
        #expect(orphanWakes)
    }

    @Test("pings go out one at a time")
    func onePingInFlight() async throws {
        var machine = openMachine()
        let results: [Duration] = try await withThrowingTaskGroup(of: Duration.self) { _ in
            var resumed: [Duration] = []
            for id in [1, 2] as [UInt64] {
                let duration = try await withCheckedThrowingContinuation { (waiter: ConnectionStateMachine.PingWaiter) in
                    _ = machine.ping(id: id, waiter: waiter)
                    var batch = ConnectionStateMachine.WriteBatch()
                    let start = ContinuousClock.now
                    machine.takeWrites(budget: 100, into: &batch, now: start)
                    #expect(batch.pings.map(\.id) == [id] && batch.pings.allSatisfy { $0.payload == nil })
                    var second = ConnectionStateMachine.WriteBatch()
                    machine.takeWrites(budget: 100, into: &second, now: start)
                    #expect(second.pings.isEmpty)
                    let (_, waiter) = machine.pongReceived(Keepalive.payload(tag: .user, id: id), at: start + .milliseconds(5))!
                    let (pongWaiter, roundTrip) = waiter!
                    pongWaiter.resume(returning: roundTrip)
                }
                resumed.append(duration)
            }
            return resumed
        }
        #expect(results == [.milliseconds(5), .milliseconds(5)])
    }
}
