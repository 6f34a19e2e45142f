import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

/// One connection driven through ``ClientEngine``, the value production's glue lives in:
/// the upgrade is answered with a real 101, the peer's bytes go in, the client's bytes come
/// out (unmasked here for the assertions). Time is a value.
struct EngineUnderTest {
    var engine: ClientEngine
    var now = ContinuousClock.now
    /// Messages the consumer was handed.
    var received: [WebSocketMessage] = []
    /// How many times the connection ended (must be once).
    var endings = 0

    init(configuration: WebSocketConfiguration = WebSocketConfiguration()) {
        engine = ClientEngine(
            url: try! WebSocketURL(parsing: "ws://example.test/chat"), configuration: configuration, now: now,
            keyBytes: Array(0..<16), maskingKeys: .seeded(7), keepaliveGrid: false)
        _ = engine.takeOutput(budget: 1 << 16, now: now)  // the upgrade request
        let accept = HandshakeRequest.acceptValue(forKey: engine.handshakeKey, sha1: { Crypto.sha1($0) })
        engine.receive(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n".utf8), now: now)
        _ = takeEvents()
    }

    var machine: ConnectionStateMachine { engine.machine }
    var pausedReading: Bool { engine.isReadingPaused }

    /// The peer's bytes arrive; whole messages count as received only when the consumer takes them.
    mutating func peerSends(_ bytes: [UInt8]) {
        engine.receive(bytes, now: now)
    }

    /// The consumer takes what happened.
    @discardableResult
    mutating func takeEvents() -> [ClientEngine.Event] {
        let events = engine.takeEvents(now: now)
        for event in events {
            switch event {
            case .message(let message): received.append(message)
            case .ended: endings += 1
            case .opened, .pong: break
            }
        }
        return events
    }

    /// The socket takes everything waiting: the client's frames, unmasked.
    mutating func flush() -> [(opcode: UInt8, payload: [UInt8])] {
        Self.unmask(engine.takeOutput(budget: 1 << 20, now: now))
    }

    /// Time passes to `instant`; the engine's timer fires if it is due by then.
    mutating func advance(to instant: ContinuousClock.Instant) -> ConnectionStateMachine.TimerAction? {
        now = instant
        guard let deadline = engine.nextDeadline, deadline <= now else { return nil }
        return engine.timerFired(now: now)
    }

    /// The socket is gone (the peer ended TCP, or it was dropped).
    mutating func socketClosed(acknowledged: Int? = nil) {
        engine.socketClosed(acknowledged: acknowledged)
        takeEvents()
    }

    /// Splits masked client frames into opcode and unmasked payload (any length RFC 6455
    /// 5.2 allows; a frame cut short at the end is left out).
    static func unmask(_ bytes: [UInt8]) -> [(opcode: UInt8, payload: [UInt8])] {
        var frames: [(UInt8, [UInt8])] = []
        var index = 0
        while index + 2 <= bytes.count {
            #expect(bytes[index + 1] & 0x80 != 0, "every client frame is masked")
            var length = Int(bytes[index + 1] & 0x7F)
            var header = 2
            let extra = length == 126 ? 2 : length == 127 ? 8 : 0
            guard index + header + extra + 4 <= bytes.count else { break }
            if extra > 0 {
                length = bytes[index + 2..<index + 2 + extra].reduce(0) { $0 << 8 | Int($1) }
                header += extra
            }
            let key = Array(bytes[index + header..<index + header + 4])
            header += 4
            guard index + header + length <= bytes.count else { break }
            let payload = (0..<length).map { bytes[index + header + $0] ^ key[$0 % 4] }
            frames.append((bytes[index] & 0x0F, payload))
            index += header + length
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
    func clientInitiated() {
        var connection = EngineUnderTest()
        let accepted = connection.engine.send(.text("last"))
        #expect(accepted)
        connection.engine.close(code: .normalClosure, reason: "bye", now: connection.now)
        #expect(connection.engine.nextDeadline == connection.now + .seconds(10))
        let written = connection.flush()
        #expect(written.map(\.opcode) == [0x1, 0x8])
        #expect(written.last?.payload == closePayload(1000, "bye"))
        connection.peerSends(serverClose(1000, "ok"))
        // Both close frames are done: the server ends TCP first (7.1.1); drop after 1 s if not.
        #expect(connection.engine.nextDeadline == connection.now + .seconds(1))
        guard case .dropAfterClose(finished: true) = connection.advance(to: connection.now + .seconds(1)) else {
            Issue.record("the linger after a finished close drops the socket")
            return
        }
        #expect(connection.engine.wantsSocketClosed)
        connection.socketClosed()
        let ending = connection.machine.ending
        #expect(ending?.closeCode == 1000 && ending?.closeReason == "ok")
        #expect(ending?.initiator == .local && ending?.error == nil)
        #expect(connection.endings == 1)
    }

    @Test("server-initiated: the answer echoes the code (5.5.1) ahead of unsent messages, which are reported")
    func serverInitiated() {
        var connection = EngineUnderTest()
        connection.peerSends(serverClose(1001, "going"))
        #expect(!connection.machine.isOpen)
        let lateAccepted = connection.engine.send(.text("late"))
        #expect(!lateAccepted, "a send after the peer's close fails")
        #expect(connection.engine.closedError == .closed(code: .goingAway, reason: "going"))
        let written = connection.flush()
        #expect(written.count == 1 && written[0].opcode == 0x8 && written[0].payload == closePayload(1001))
        guard case .dropAfterClose(finished: true) = connection.advance(to: connection.now + .seconds(1)) else {
            Issue.record("the linger after a finished close drops the socket")
            return
        }
        connection.socketClosed()
        let ending = connection.machine.ending
        #expect(ending?.closeCode == .goingAway && ending?.closeReason == "going" && ending?.initiator == .peer)
    }

    @Test("simultaneous: both sides' frames cross; neither answers the other, the peer's code is reported")
    func simultaneous() {
        var connection = EngineUnderTest()
        connection.engine.close(code: .normalClosure, reason: "mine", now: connection.now)
        // Our close is taken by the writer (its first byte is on the wire) when the server's arrives.
        let first = connection.engine.takeOutput(budget: 1, now: connection.now)
        #expect(first == [0x88])
        connection.peerSends(serverClose(1001, "theirs"))
        let rest = connection.engine.takeOutput(budget: 1 << 16, now: connection.now)
        let written = EngineUnderTest.unmask(first + rest)
        #expect(written.map(\.payload) == [closePayload(1000, "mine")], "no second close is written")
        connection.socketClosed()
        #expect(connection.machine.ending?.closeCode == .goingAway)
        #expect(connection.machine.ending?.initiator == .local)
    }

    @Test("failure mid-message: a data frame inside a fragmented message fails with 1002, ahead of everything, nothing delivered")
    func failureMidMessage() {
        var connection = EngineUnderTest()
        let accepted = connection.engine.send(.text("queued"))
        #expect(accepted)
        // "hel" without FIN, then a new text frame instead of a continuation.
        connection.peerSends([0x01, 0x03] + Array("hel".utf8) + [0x81, 0x02] + Array("lo".utf8))
        connection.takeEvents()
        #expect(connection.received.isEmpty)
        let written = connection.flush()
        #expect(written.count == 1 && written[0].opcode == 0x8)
        #expect(Array(written[0].payload.prefix(2)) == [0x03, 0xEA])
        // Failing waits only for the server to end TCP.
        #expect(connection.engine.nextDeadline == connection.now + .seconds(1))
        connection.socketClosed()
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
        var connection = EngineUnderTest()
        connection.peerSends([0x81, 0x02] + Array("hi".utf8) + [0x89, 0x7E])  // a message, then a ping too long
        #expect(connection.machine.bufferedMessageCount == 1, "the message waits for the consumer")
        #expect(connection.pausedReading)
        let written = connection.flush()
        #expect(written.isEmpty, "nothing is written while the failure waits")
        #expect(connection.engine.nextDeadline == connection.now + .seconds(2))
        guard case .fail(let failing) = connection.advance(to: connection.now + .seconds(2)) else {
            Issue.record("the held failure applies once its grace is over")
            return
        }
        #expect(failing.closeFrame == nil, "the close waits behind whatever the consumer sent meanwhile")
        let closing = connection.flush()
        #expect(closing.count == 1 && closing[0].opcode == 0x8 && closing[0].payload.prefix(2) == [0x03, 0xEA], "1002")
        connection.takeEvents()
        #expect(connection.received == [.text("hi")])
    }

    @Test("close timeout: a server that never answers is dropped after 10 s; an unacknowledged close frame is 1006")
    func closeTimeout() {
        for acknowledged in [true, false] {
            var connection = EngineUnderTest()
            connection.engine.close(code: .normalClosure, reason: "", now: connection.now)
            _ = connection.flush()
            let end = connection.engine.streamBytes
            #expect(connection.advance(to: connection.now + .seconds(9)) == nil)
            guard case .dropAfterClose(finished: false) = connection.advance(to: connection.now + .seconds(1)) else {
                Issue.record("the close timeout drops the socket")
                return
            }
            connection.socketClosed(acknowledged: acknowledged ? end : end - 1)
            #expect(connection.machine.ending?.closeCode == (acknowledged ? .normalClosure : .abnormalClosure))
            #expect(connection.machine.ending?.error == nil)
        }
    }

    @Test("a failure whose close frame never left (the server stopped reading) ends with 1006, not the frame's code")
    func failureCloseNeverWritten() {
        var connection = EngineUnderTest()
        connection.peerSends([0x80, 0x01, 0x78])  // a continuation with no message to continue
        let written = connection.engine.streamBytes
        guard case .dropAfterClose = connection.advance(to: connection.now + .seconds(1)) else {
            Issue.record("the linger after failing drops the socket")
            return
        }
        connection.socketClosed(acknowledged: written)
        #expect(connection.machine.ending?.closeCode == .abnormalClosure)
        #expect(connection.machine.ending?.error?.closeCode == .protocolError, "the error still says why")
    }

    @Test("pong timeout: keep-alive pings, and no pong within pongTimeout ends the connection with .pongTimeout")
    func pongTimeout() {
        var configuration = WebSocketConfiguration()
        configuration.pingInterval = .seconds(5)
        configuration.pongTimeout = .seconds(2)
        var connection = EngineUnderTest(configuration: configuration)
        let start = connection.now
        guard case .sendKeepalivePing(let payload) = connection.advance(to: start + .seconds(5)) else {
            Issue.record("keep-alive pings an idle connection")
            return
        }
        let pinged = connection.flush()
        #expect(pinged.map(\.opcode) == [0x9])
        // Answered in time: the next ping comes an interval later.
        connection.peerSends([0x8A, UInt8(payload.count)] + payload)
        #expect(connection.engine.nextDeadline == start + .seconds(10))
        guard case .sendKeepalivePing = connection.advance(to: start + .seconds(10)) else {
            Issue.record("the next keep-alive ping")
            return
        }
        // Unread bytes waiting on the socket may hold the pong: the deadline moves instead.
        guard case .rearm = connection.engine.timerFired(now: start + .seconds(12), unreadInputWaiting: true) else {
            Issue.record("unread input moves the pong deadline")
            return
        }
        guard case .pongTimedOut = connection.advance(to: start + .seconds(14)) else {
            Issue.record("no pong in time ends the connection")
            return
        }
        connection.socketClosed()
        #expect(connection.machine.ending?.closeCode == .abnormalClosure)
        #expect(connection.machine.ending?.error == .pongTimeout)
        #expect(connection.machine.ending?.initiator == .local)
    }

    @Test("random event sequences never end a connection twice, and every ending has a code")
    func randomSequences() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var connection = EngineUnderTest()
            for _ in 0..<20 {
                switch Int.random(in: 0..<9, using: &generator) {
                case 0: _ = connection.engine.send(.text("m"))
                case 1: connection.engine.close(code: .normalClosure, reason: "", now: connection.now)
                case 2: connection.peerSends(serverClose(1000))
                case 3: connection.peerSends([0x81, 0x01, 0x41])
                case 4: connection.peerSends([0x82, 0x7E])  // truncated: waits for more
                case 5: connection.peerSends([0x8F, 0x00])  // unknown opcode
                case 6: _ = connection.flush()
                case 7: _ = connection.advance(to: connection.now + .milliseconds(Int64.random(in: 0...3000, using: &generator)))
                default: connection.socketClosed()
                }
                connection.takeEvents()
            }
            connection.socketClosed()
            #expect(connection.endings == 1)
            #expect(connection.machine.ending != nil)
            #expect(connection.engine.nextDeadline == nil)
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
