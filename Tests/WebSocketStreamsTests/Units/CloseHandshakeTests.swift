import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

/// One connection's decisions, driven the way the transport drives them but without a
/// socket: the peer's bytes go through the frame assembler into the state machine, and
/// what the machine hands the writer comes out as the client's bytes. Time is a value.
private struct ConnectionUnderTest {
    var machine: ConnectionStateMachine
    var assembler = MessageAssembler(maxMessageSize: 1 << 20)
    var writer = FrameWriter()
    var now = ContinuousClock.now
    /// Messages the consumer was handed (or that wait for it).
    var received: [WebSocketMessage] = []
    var pausedReading = false

    init(configuration: WebSocketConfiguration = WebSocketConfiguration()) {
        machine = ConnectionStateMachine(configuration: configuration, handshakeDeadline: now + .seconds(10))
        machine.timing.pingGrid = nil  // exact keep-alive times (the grid has tests of its own)
        _ = machine.established(subprotocol: nil, extensions: nil, now: now)
        _ = machine.takeRequests(now: now)
    }

    /// The peer's bytes arrive: each event goes to the machine as the transport routes it.
    mutating func peerSends(_ bytes: [UInt8]) {
        var events: [InboundEvent] = []
        _ = bytes.withUnsafeBytes { assembler.read($0, into: &events, messageLimit: .max, byteLimit: .max) }
        for event in events {
            switch event {
            case .message(let content):
                let message = WebSocketMessage(content)
                var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
                if machine.receive(contentsOf: [message], deliveries: &deliveries, now: now) { pausedReading = true }
                received.append(message)
            case .ping(let payload):
                if let answer = machine.pongAnswering(payload) { writer.enqueueControl(.pong, payload: answer) }
            case .pong(let payload):
                _ = machine.pongReceived(payload, at: now)
            case .close(let frame):
                let action = machine.peerClosed(frame, now: now)
                if let answer = action.answer { writer.enqueueCloseNow(answer) }
            case .failure(let failure):
                switch machine.protocolFailure(failure, now: now) {
                case .fail(let failing): if let frame = failing.closeFrame { writer.enqueueCloseNow(frame) }
                case .deferred: pausedReading = true
                }
            }
        }
    }

    /// The loop's writable pass: what the machine hands over is encoded; returns the
    /// client's frames, unmasked, and reports the close frame written.
    mutating func flush() -> [(opcode: UInt8, payload: [UInt8])] {
        var batch = ConnectionStateMachine.WriteBatch()
        if writer.wantsMessages { machine.takeWrites(budget: 1 << 20, into: &batch, now: now) }
        for (id, payload) in batch.pings { writer.enqueueControl(.ping, payload: payload ?? Keepalive.payload(tag: .user, id: id)) }
        for message in batch.messages { writer.enqueue(message) }
        if let close = batch.close { writer.enqueueClose(close) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = buffer.withUnsafeMutableBytes { writer.fill($0) }
        if writer.closeWritten { _ = machine.closeFrameWritten(now: now) }
        return Self.unmask(Array(buffer[..<count]))
    }

    /// Time passes to `instant`; the machine's timer fires if it is due by then.
    mutating func advance(to instant: ContinuousClock.Instant) -> ConnectionStateMachine.TimerAction? {
        now = instant
        guard let deadline = machine.nextDeadline, deadline <= now else { return nil }
        return machine.timerFired(now: now)
    }

    /// Splits masked client frames into opcode and unmasked payload (payloads < 126 bytes).
    static func unmask(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        var frames: [(UInt8, [UInt8])] = []
        var index = 0
        while index + 6 <= bytes.count {
            #expect(bytes[index + 1] & 0x80 != 0, "every client frame is masked")
            let length = Int(bytes[index + 1] & 0x7F)
            let key = Array(bytes[index + 2..<index + 6])
            let payload = (0..<length).map { bytes[index + 6 + $0] ^ key[$0 % 4] }
            frames.append((bytes[index] & 0x0F, payload))
            index += 6 + length
        }
        return frames
    }
}

/// A server's close frame, unmasked.
private func serverClose(_ code: UInt16, _ reason: String = "") -> [UInt8] {
    let payload = [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
    return [0x88, UInt8(payload.count)] + payload
}

private func closePayload(_ code: UInt16, _ reason: String = "") -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
}

@Suite("The close handshake of RFC 6455 section 7, fed bytes (no socket)")
struct CloseHandshakeTests {
    @Test("client-initiated: our close goes out behind the queued message, the server's answer completes it, then TCP lingers 1 s")
    func clientInitiated() async {
        var connection = ConnectionUnderTest()
        _ = connection.machine.send(.text("last"))
        await withUnsafeContinuation { (waiter: UnsafeContinuation<Void, Never>) in
            _ = connection.machine.close(code: .normalClosure, reason: "bye", waiter: waiter)
            #expect(connection.machine.takeRequests(now: connection.now).contains(.deadlineMoved))
            #expect(connection.machine.nextDeadline == connection.now + .seconds(10))
            let written = connection.flush()
            #expect(written.map(\.opcode) == [0x1, 0x8])
            #expect(written.last?.payload == closePayload(1000, "bye"))
            connection.peerSends(serverClose(1000, "ok"))
            // Both close frames are done: the server ends TCP first (7.1.1); drop after 1 s if not.
            #expect(connection.machine.nextDeadline == connection.now + .seconds(1))
            guard case .dropAfterClose(finished: true) = connection.advance(to: connection.now + .seconds(1)) else {
                Issue.record("the linger after a finished close drops the socket")
                waiter.resume()
                return
            }
            connection.machine.transportClosed()?.run()
        }
        let ending = connection.machine.ending
        #expect(ending?.closeCode == 1000 && ending?.closeReason == "ok")
        #expect(ending?.initiator == .local && ending?.error == nil)
    }

    @Test("server-initiated: the answer echoes the code (5.5.1) ahead of unsent messages, which are reported")
    func serverInitiated() {
        var connection = ConnectionUnderTest()
        connection.peerSends(serverClose(1001, "going"))
        #expect(!connection.machine.isOpen)
        guard case .fail(let error) = connection.machine.send(.text("late")) else {
            Issue.record("a send after the peer's close fails")
            return
        }
        #expect(error == .closed(code: .goingAway, reason: "going"))
        let written = connection.flush()
        #expect(written.count == 1 && written[0].opcode == 0x8 && written[0].payload == closePayload(1001))
        guard case .dropAfterClose(finished: true) = connection.advance(to: connection.now + .seconds(1)) else {
            Issue.record("the linger after a finished close drops the socket")
            return
        }
        _ = connection.machine.transportClosed()
        let ending = connection.machine.ending
        #expect(ending?.closeCode == .goingAway && ending?.closeReason == "going" && ending?.initiator == .peer)
    }

    @Test("simultaneous: both sides' frames cross; neither answers the other, the peer's code is reported")
    func simultaneous() {
        var connection = ConnectionUnderTest()
        _ = connection.machine.requestClose(code: .normalClosure, reason: "mine")
        var batch = ConnectionStateMachine.WriteBatch()
        connection.machine.takeWrites(budget: 1 << 20, into: &batch, now: connection.now)
        #expect(batch.close == CloseFrame(code: .normalClosure, reason: "mine"))
        connection.writer.enqueueClose(batch.close!)
        // The server's close arrives while ours is with the writer: no second close is queued.
        let answer = connection.machine.peerClosed(CloseFrame(code: .goingAway, reason: "theirs"), now: connection.now)
        #expect(answer.answer == nil)
        #expect(!answer.endsTLS, "ours is not on the wire yet")
        let written = connection.flush()
        #expect(written.map(\.payload) == [closePayload(1000, "mine")])
        _ = connection.machine.transportClosed()
        #expect(connection.machine.ending?.closeCode == .goingAway)
        #expect(connection.machine.ending?.initiator == .local)
    }

    @Test("failure mid-message: a data frame inside a fragmented message fails with 1002, ahead of everything, nothing delivered")
    func failureMidMessage() {
        var connection = ConnectionUnderTest()
        _ = connection.machine.send(.text("queued"))
        // "hel" without FIN, then a new text frame instead of a continuation.
        connection.peerSends([0x01, 0x03] + Array("hel".utf8) + [0x81, 0x02] + Array("lo".utf8))
        #expect(connection.received.isEmpty)
        let written = connection.flush()
        #expect(written.count == 1 && written[0].opcode == 0x8)
        #expect(Array(written[0].payload.prefix(2)) == [0x03, 0xEA])
        // Failing waits only for the server to end TCP.
        #expect(connection.machine.nextDeadline == connection.now + .seconds(1))
        _ = connection.machine.transportClosed()
        let ending = connection.machine.ending
        #expect(ending?.closeCode == .protocolError && ending?.initiator == .local)
        guard case .protocolViolation(closeCode: .protocolError, _)? = ending?.error.map(ErrorShape.init) else {
            Issue.record("the error is a protocol violation with 1002, not \(String(describing: ending?.error))")
            return
        }
        #expect(ending?.unsentMessages == [.text("queued")])
    }

    @Test("a broken rule right behind an unread message waits for the consumer, at most 2 s")
    func deferredFailure() {
        var connection = ConnectionUnderTest()
        connection.peerSends([0x81, 0x02] + Array("hi".utf8) + [0x89, 0x7E])  // a message, then a ping too long
        #expect(connection.received == [.text("hi")])
        #expect(connection.pausedReading)
        #expect(connection.flush().isEmpty, "nothing is written while the failure waits")
        #expect(connection.machine.nextDeadline == connection.now + .seconds(2))
        guard case .fail(let failing) = connection.advance(to: connection.now + .seconds(2)) else {
            Issue.record("the held failure applies once its grace is over")
            return
        }
        #expect(failing.closeFrame?.code == .protocolError)
    }

    @Test("close timeout: a server that never answers is dropped after 10 s; an unacknowledged close frame is 1006")
    func closeTimeout() {
        for acknowledged in [true, false] {
            var connection = ConnectionUnderTest()
            _ = connection.machine.requestClose(code: .normalClosure, reason: "")
            _ = connection.machine.takeRequests(now: connection.now)
            _ = connection.flush()
            #expect(connection.advance(to: connection.now + .seconds(9)) == nil)
            guard case .dropAfterClose(finished: false) = connection.advance(to: connection.now + .seconds(1)) else {
                Issue.record("the close timeout drops the socket")
                return
            }
            _ = connection.machine.transportClosed(closeFrameAcknowledged: acknowledged)
            #expect(connection.machine.ending?.closeCode == (acknowledged ? .normalClosure : .abnormalClosure))
            #expect(connection.machine.ending?.error == nil)
        }
    }

    @Test("pong timeout: keep-alive pings, and no pong within pongTimeout ends the connection with .pongTimeout")
    func pongTimeout() {
        var configuration = WebSocketConfiguration()
        configuration.pingInterval = .seconds(5)
        configuration.pongTimeout = .seconds(2)
        var connection = ConnectionUnderTest(configuration: configuration)
        let start = connection.now
        guard case .sendKeepalivePing(let payload) = connection.advance(to: start + .seconds(5)) else {
            Issue.record("keep-alive pings an idle connection")
            return
        }
        // Answered in time: the next ping comes an interval later.
        connection.peerSends([0x8A, UInt8(payload.count)] + payload)
        #expect(connection.machine.nextDeadline == start + .seconds(10))
        guard case .sendKeepalivePing = connection.advance(to: start + .seconds(10)) else {
            Issue.record("the next keep-alive ping")
            return
        }
        // Unread bytes waiting on the socket may hold the pong: the deadline moves instead.
        guard case .rearm = connection.machine.timerFired(now: start + .seconds(12), unreadInputWaiting: true) else {
            Issue.record("unread input moves the pong deadline")
            return
        }
        guard case .pongTimedOut = connection.advance(to: start + .seconds(14)) else {
            Issue.record("no pong in time ends the connection")
            return
        }
        _ = connection.machine.transportClosed()
        #expect(connection.machine.ending?.closeCode == .abnormalClosure)
        #expect(connection.machine.ending?.error == .pongTimeout)
        #expect(connection.machine.ending?.initiator == .local)
    }

    @Test("random event sequences never end a connection twice, and every ending has a code")
    func randomSequences() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var connection = ConnectionUnderTest()
            var endings = 0
            for _ in 0..<20 {
                switch Int.random(in: 0..<9, using: &generator) {
                case 0: _ = connection.machine.send(.text("m"))
                case 1: _ = connection.machine.requestClose(code: .normalClosure, reason: "")
                case 2: connection.peerSends(serverClose(1000))
                case 3: connection.peerSends([0x81, 0x01, 0x41])
                case 4: connection.peerSends([0x82, 0x7E])  // truncated: waits for more
                case 5: connection.peerSends([0x8F, 0x00])  // unknown opcode
                case 6: _ = connection.flush()
                case 7: _ = connection.advance(to: connection.now + .milliseconds(Int64.random(in: 0...3000, using: &generator)))
                default: if connection.machine.transportClosed() != nil { endings += 1 }
                }
            }
            if connection.machine.transportClosed() != nil { endings += 1 }
            #expect(endings == 1)
            #expect(connection.machine.ending != nil)
        }
    }
}

/// The shape of a ``WebSocketError`` for pattern matching in these tests.
private enum ErrorShape {
    case protocolViolation(closeCode: WebSocketCloseCode, String)
    case other

    init(_ error: WebSocketError) {
        if error.code == .protocolViolation, let code = error.closeCode {
            self = .protocolViolation(closeCode: code, error.reason ?? "")
        } else {
            self = .other
        }
    }
}
