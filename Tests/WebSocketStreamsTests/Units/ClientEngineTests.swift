import FoundationEssentials
import Testing
@testable import WebSocketStreams
import WebSocketCore

/// A 101 answer to `engine`'s upgrade request, with `extra` header lines.
private func switchingProtocols(for engine: ClientEngine, accept: String? = nil, extra: String = "") -> [UInt8] {
    let value = accept ?? HandshakeRequest.acceptValue(forKey: engine.handshakeKey, sha1: { Crypto.sha1($0) })
    return Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(value)\r\n\(extra)\r\n".utf8)
}

private func newEngine(_ configuration: WebSocketConfiguration = WebSocketConfiguration()) -> (ClientEngine, ContinuousClock.Instant) {
    let now = ContinuousClock.now
    let engine = ClientEngine(
        url: try! WebSocketURL(parsing: "ws://example.test:8080/feed?x=1"), configuration: configuration, now: now,
        keyBytes: Array(repeating: 0, count: 16), maskingKeys: .seeded(1), keepaliveGrid: false)
    return (engine, now)
}

/// An engine past its handshake.
private func openEngine(_ configuration: WebSocketConfiguration = WebSocketConfiguration()) -> (ClientEngine, ContinuousClock.Instant) {
    var (engine, now) = newEngine(configuration)
    _ = engine.takeOutput(budget: 4096, now: now)
    engine.receive(switchingProtocols(for: engine), now: now)
    _ = engine.takeEvents(now: now)
    return (engine, now)
}

@Suite("ClientEngine: one connection's protocol, bytes in and bytes out")
struct ClientEngineTests {
    @Test("the upgrade request is the first output, byte for byte, and a valid 101 opens the connection")
    func openingHandshake() {
        var (engine, now) = newEngine()
        #expect(engine.nextDeadline == now + WebSocketConfiguration().connectTimeout, "the handshake's deadline is armed")
        let request = engine.takeOutput(budget: 4096, now: now)
        #expect(String(decoding: request, as: UTF8.self) == """
            GET /feed?x=1 HTTP/1.1\r
            Host: example.test:8080\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r
            Sec-WebSocket-Version: 13\r
            Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=12\r
            \r

            """)
        let leftover = engine.takeOutput(budget: 4096, now: now)
        #expect(leftover.isEmpty)
        // The answer in two pieces, with the first frame right behind it.
        let answer = switchingProtocols(for: engine) + [0x81, 0x02, 0x68, 0x69]
        engine.receive(Array(answer[..<10]), now: now)
        #expect(!engine.isOpen)
        engine.receive(Array(answer[10...]), now: now)
        let events = engine.takeEvents(now: now)
        guard events.count == 2, case .opened(nil, nil) = events[0], case .message(.text("hi")) = events[1] else {
            Issue.record("opened, then the message: \(events)")
            return
        }
        #expect(engine.isOpen)
    }

    @Test("a 401 is a typed rejection with the status and body; the engine ends and arms nothing")
    func rejected() {
        var (engine, now) = newEngine()
        _ = engine.takeOutput(budget: 4096, now: now)
        engine.receive(Array("HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\nno".utf8), now: now)
        #expect(!engine.hasEnded, "the body is not complete yet")
        engine.receive(Array("pe!".utf8), now: now)
        guard case .ended(let ending)? = engine.takeEvents(now: now).last else {
            Issue.record("the engine ends")
            return
        }
        #expect(ending.error?.code == .handshakeRejected)
        #expect(ending.error?.httpStatus == 401)
        #expect(ending.error?.body == Data("nope!".utf8))
        #expect(engine.wantsSocketClosed && engine.nextDeadline == nil)
        let afterEnd = engine.takeOutput(budget: 4096, now: now)
        #expect(afterEnd.isEmpty)
    }

    @Test("a 101 with the wrong Sec-WebSocket-Accept fails the handshake with the reason")
    func badAccept() {
        var (engine, now) = newEngine()
        _ = engine.takeOutput(budget: 4096, now: now)
        engine.receive(switchingProtocols(for: engine, accept: "AAAAAAAAAAAAAAAAAAAAAAAAAAA="), now: now)
        guard case .ended(let ending)? = engine.takeEvents(now: now).last else {
            Issue.record("the engine ends")
            return
        }
        #expect(ending.error?.code == .connectionFailed)
        #expect(ending.error?.reason?.contains("Sec-WebSocket-Accept does not match") == true)
        #expect(ending.closeCode == .abnormalClosure)
    }

    @Test("a ping is answered with a masked pong carrying its payload; the user's ping gets its pong as an event")
    func pingAnswered() {
        var (engine, now) = openEngine()
        engine.receive([0x89, 0x03, 0x61, 0x62, 0x63], now: now)
        let output = engine.takeOutput(budget: 4096, now: now)
        #expect(EngineUnderTest.unmask(output).map(\.opcode) == [0xA])
        #expect(EngineUnderTest.unmask(output).first?.payload == Array("abc".utf8))
        #expect(output[1] & 0x80 != 0, "masked")
        let pinged = engine.ping(payload: [1, 2])
        #expect(pinged)
        let pingOutput = engine.takeOutput(budget: 4096, now: now)
        #expect(EngineUnderTest.unmask(pingOutput).map(\.payload) == [[1, 2]])
        engine.receive([0x8A, 0x02, 1, 2], now: now + .milliseconds(5))
        guard case .pong([1, 2])? = engine.takeEvents(now: now).first else {
            Issue.record("the pong is an event")
            return
        }
    }

    @Test("a fragmented message with a ping between its fragments arrives whole, a byte at a time")
    func fragmented() {
        var (engine, now) = openEngine()
        let bytes: [UInt8] = [0x01, 0x02] + Array("he".utf8) + [0x89, 0x00] + [0x00, 0x01] + Array("l".utf8)
            + [0x80, 0x02] + Array("lo".utf8)
        for byte in bytes { engine.receive([byte], now: now) }
        let messages = engine.takeEvents(now: now).compactMap { event -> WebSocketMessage? in
            if case .message(let message) = event { return message }
            return nil
        }
        #expect(messages == [.text("hello")])
        let pongOutput = engine.takeOutput(budget: 4096, now: now)
        #expect(EngineUnderTest.unmask(pongOutput).map(\.opcode) == [0xA])
    }

    @Test("a message over maxMessageSize fails with 1009 at its header; the close goes out and nothing more is read")
    func tooBig() {
        var configuration = WebSocketConfiguration()
        configuration.maxMessageSize = 4
        var (engine, now) = openEngine(configuration)
        engine.receive([0x82, 0x05, 1, 2, 3, 4, 5, 0x81, 0x01, 0x41], now: now)
        let written = EngineUnderTest.unmask(engine.takeOutput(budget: 4096, now: now))
        #expect(written.map(\.opcode) == [0x8])
        #expect(written.first.map { Array($0.payload.prefix(2)) } == [0x03, 0xF1])
        #expect(engine.nextDeadline == now + .seconds(1), "waits a second for the server to end TCP")
        engine.socketClosed(acknowledged: engine.streamBytes)
        guard case .ended(let ending)? = engine.takeEvents(now: now).last else {
            Issue.record("the engine ends")
            return
        }
        #expect(ending.closeCode == .messageTooBig && ending.error?.code == .messageTooLarge)
    }

    @Test("Autobahn 4.1.4: the reply to the message before a reserved opcode goes out before the close that fails the connection")
    func replyBeforeHeldFailure() {
        var (engine, now) = openEngine()
        // "hi", then a frame with the reserved opcode 6, in one read.
        engine.receive([0x81, 0x02, 0x68, 0x69, 0x86, 0x00], now: now)
        let beforeTaking = engine.takeOutput(budget: 4096, now: now)
        #expect(beforeTaking.isEmpty, "the failure waits for the consumer to finish with \"hi\"")
        let taken = engine.takeEvents(now: now)
        guard taken.count == 1, case .message(.text("hi")) = taken[0] else {
            Issue.record("the consumer gets the message first: \(taken)")
            return
        }
        let accepted = engine.send(.text("hi"))
        #expect(accepted, "the consumer's reply is accepted: the connection has not failed yet")
        // The consumer comes back for more: the failure applies, behind the reply.
        #expect(engine.takeEvents(now: now).isEmpty)
        let written = EngineUnderTest.unmask(engine.takeOutput(budget: 4096, now: now))
        #expect(written.map(\.opcode) == [0x1, 0x8])
        #expect(written.first?.payload == Array("hi".utf8))
        #expect(written.last.map { Array($0.payload.prefix(2)) } == [0x03, 0xEA], "1002")
        engine.socketClosed(acknowledged: engine.streamBytes)
        guard case .ended(let ending)? = engine.takeEvents(now: now).last else {
            Issue.record("the engine ends")
            return
        }
        #expect(ending.closeCode == .protocolError && ending.unsentMessages.isEmpty)
    }

    @Test("a held failure's close waits behind a long reply for the close timeout, not the one-second linger")
    func heldFailureBehindLongReply() {
        var (engine, now) = openEngine()
        engine.receive([0x81, 0x02, 0x68, 0x69, 0x86, 0x00], now: now)
        _ = engine.takeEvents(now: now)  // the consumer takes "hi"
        let reply = WebSocketMessage.binary(Data(repeating: 7, count: 60_000))
        let accepted = engine.send(reply, compress: false)
        #expect(accepted)
        #expect(engine.takeEvents(now: now).isEmpty)  // it comes back: the failure applies, behind the reply
        #expect(engine.nextDeadline == now + engine.machine.timing.closeTimeout, "the close timeout, not the linger")
        // The peer reads slowly: 1 KB now, the rest two seconds later, past the linger.
        var output = engine.takeOutput(budget: 1_000, now: now)
        let later = now + .seconds(2)
        #expect(engine.nextDeadline.map { $0 > later } == true, "not dropped while the reply drains")
        output += engine.takeOutput(budget: 1 << 20, now: later)
        let written = EngineUnderTest.unmask(output)
        #expect(written.map(\.opcode) == [0x2, 0x8])
        #expect(written.first?.payload.count == 60_000)
        #expect(written.last.map { Array($0.payload.prefix(2)) } == [0x03, 0xEA], "1002")
        #expect(engine.nextDeadline == later + .seconds(1), "once the close is out, the linger")
    }

    @Test("a reserved opcode with nothing in the consumer's hands fails the connection at once")
    func failureNotHeld() {
        var (engine, now) = openEngine()
        #expect(engine.takeEvents(now: now).isEmpty, "the consumer waits, holding nothing")
        engine.receive([0x86, 0x00], now: now)
        let written = EngineUnderTest.unmask(engine.takeOutput(budget: 4096, now: now))
        #expect(written.map(\.opcode) == [0x8])
    }

    @Test("the close handshake from the server: echoed, then the server's FIN ends it cleanly, once")
    func serverCloses() {
        var (engine, now) = openEngine()
        engine.receive([0x88, 0x04, 0x0F, 0xA0, 0x68, 0x69], now: now)  // 4000 "hi"
        let echo = engine.takeOutput(budget: 4096, now: now)
        #expect(EngineUnderTest.unmask(echo).map(\.payload) == [[0x0F, 0xA0]])
        engine.socketClosed(acknowledged: engine.streamBytes)
        engine.socketClosed(acknowledged: engine.streamBytes)
        let endings = engine.takeEvents(now: now).filter { if case .ended = $0 { true } else { false } }
        #expect(endings.count == 1)
        #expect(engine.machine.ending?.closeCode.rawValue == 4000 && engine.machine.ending?.initiator == .peer)
        let afterEnd = engine.takeOutput(budget: 10, now: now)
        #expect(engine.nextDeadline == nil && afterEnd.isEmpty)
    }

    @Test("messages whose bytes the peer did not acknowledge are reported unsent, in order")
    func unacknowledgedAreUnsent() {
        var (engine, now) = openEngine()
        for text in ["a", "b", "c"] { let accepted = engine.send(.text(text)); #expect(accepted) }
        let start = engine.streamBytes
        _ = engine.takeOutput(budget: 4096, now: now)
        engine.socketClosed(acknowledged: start + 7, abnormal: .connectionFailed("reset"))  // "a" (7 bytes) only
        #expect(engine.machine.ending?.unsentMessages == [.text("b"), .text("c")])
        #expect(engine.machine.ending?.error == .connectionFailed("reset"))
    }
}
