import WebSocketStreams

/// What a raw route does once the test server drives the connection byte by byte: which
/// bytes to write, when to wake up, and when to end.
///
/// A pure value fed three events (the start, the timer, bytes from the client), returning
/// an ``Action`` each time. Two drivers carry the actions out: ``RawPeer`` over plain TCP
/// (a socket taken from libwebsockets) and ``RawTLSPeer`` over TLS (the raw TLS listener),
/// so a route behaves the same on `ws://` and `wss://`.
///
/// The request has been read before ``start()``: bytes from the client are WebSocket
/// frames (or, before a late 101, nothing).
struct RawRouteMachine {
    /// What to do after an event.
    struct Action {
        /// Bytes to write to the client, in order.
        var write: [UInt8] = []
        /// Arms the connection's one-shot timer for this long from now, replacing any
        /// earlier one; nil leaves the timer as it was.
        var timer: Duration?
        /// Ends the connection once `write` is written.
        var end = false
        /// What the client sent, for the connection's record.
        var received = ClientActivity()

        static let end = Action(end: true)
    }

    let route: ServerRoute
    /// The client's `Sec-WebSocket-Key`.
    let key: String
    /// Whether a close frame went to the client: anything it sends then ends the connection.
    private var sentClose = false
    /// The client's close frame arrived (hostile routes); what follows is ignored.
    private var receivedClose = false
    /// What the client sent, on hostile routes.
    private var reader = ClientFrameReader()
    /// `slowloris`: the 101 being trickled, and how much of it went out.
    private var trickle: (bytes: [UInt8], sent: Int)?
    /// `/frame-echo`: what the client sent, turned into the frames to send back.
    private var echo = FrameEcho()

    init(route: ServerRoute, key: String) {
        self.route = route
        self.key = key
    }

    /// The connection is the route's: what to send first.
    mutating func start() -> Action {
        switch route {
        case .slow(let milliseconds):
            return Action(timer: .milliseconds(max(1, milliseconds)))
        case .uncompressed(let extensions):
            // permessage-deflate accepted, yet frames sent without RSV1 (allowed by RFC 7692).
            guard let upgrade = HTTPResponses.upgrade(key: key, extensions: extensions) else { return .end }
            let pong = Self.controlFrame(0x8A, payload: Array("abc".utf8))
            sentClose = true
            return Action(write: upgrade + Self.textFrame("uncompressed") + pong + Self.closeFrame(1000))
        case .frameEcho:
            guard let upgrade = HTTPResponses.upgrade(key: key) else { return .end }
            return Action(write: upgrade)
        case .hugeHeaders:
            // A header block that never ends: 1 MiB of lines and no blank line.
            let line = Array("X-Filler: \(String(repeating: "a", count: 1000))\r\n".utf8)
            var bytes = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n".utf8)
            for _ in 0..<(1 << 20) / line.count { bytes += line }
            return Action(write: bytes, timer: .seconds(10))
        case .hostile(let behaviour):
            guard let upgrade = HTTPResponses.upgrade(key: key) else { return .end }
            if case .slowloris(let milliseconds) = behaviour {
                trickle = (upgrade, 0)
                return Action(timer: .milliseconds(milliseconds))
            }
            sentClose = behaviour.sendsClose
            // Routes that may leave the client waiting for bytes never sent drop TCP soon;
            // the others wait for the client's close, with a safety net.
            return Action(write: upgrade + behaviour.bytesAfterHandshake,
                          timer: behaviour.dropsAfterWriting ? .milliseconds(300) : .seconds(10))
        default:
            // `/hang`: never a word.
            return Action()
        }
    }

    /// The timer armed by an earlier action fired.
    mutating func timerFired() -> Action {
        switch route {
        case .slow:
            // The late answer: a valid upgrade, then a close frame (1000, "slow").
            guard let upgrade = HTTPResponses.upgrade(key: key) else { return .end }
            sentClose = true
            return Action(write: upgrade + Self.closeFrame(1000, reason: "slow"))
        case .hostile(.slowloris(let milliseconds)) where !receivedClose:
            // The next byte of the trickled 101; once all went out, the end.
            guard let (bytes, sent) = trickle, sent < bytes.count else { return .end }
            trickle = (bytes, sent + 1)
            return Action(write: [bytes[sent]], timer: .milliseconds(milliseconds))
        case .hostile, .frameEcho, .hugeHeaders:
            return .end
        default:
            return Action()
        }
    }

    /// Bytes arrived from the client.
    mutating func received(_ bytes: UnsafeRawBufferPointer) -> Action {
        switch route {
        case .hostile:
            return hostileReceived(bytes)
        case .frameEcho:
            let (reply, closed) = echo.receive(bytes)
            guard closed else { return Action(write: reply) }
            // The close was echoed: end TCP once it is surely written.
            sentClose = true
            return Action(write: reply, timer: .milliseconds(50))
        default:
            // The client's answer to our close (or anything after it) ends the connection.
            return sentClose ? .end : Action()
        }
    }

    /// Records what the client sent on a hostile route and answers its pings (so a client
    /// can measure a round trip through a flood). Its close frame is answered with a close
    /// (unless the route sent one) and ends the connection.
    private mutating func hostileReceived(_ bytes: UnsafeRawBufferPointer) -> Action {
        guard !receivedClose else { return Action() }
        reader.append(bytes)
        var action = Action()
        while let frame = reader.nextFrame() {
            switch frame.opcode {
            case 0x8:
                let code: WebSocketCloseCode? = frame.payload.count >= 2
                    ? WebSocketCloseCode(rawValue: UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
                    : .noStatusReceived
                let reason = frame.payload.count > 2 ? String(decoding: frame.payload[2...], as: UTF8.self) : ""
                action.received.close = (code, reason)
                receivedClose = true
                guard !sentClose else {
                    action.end = true
                    return action
                }
                // Echo its code and reason; end TCP once the echo is surely written.
                sentClose = true
                action.write += Self.controlFrame(0x88, payload: frame.payload)
                action.timer = .milliseconds(50)
                return action
            case 0x9:
                action.write += Self.controlFrame(0x8A, payload: frame.payload)
            case 0xA:
                action.received.pongs += 1
            case 0x0, 0x1, 0x2:
                if frame.fin { action.received.messages += 1 }
                action.received.bytes += frame.payload.count
            default:
                break
            }
        }
        return action
    }

    /// A server control frame (unmasked) with `firstByte` (FIN and opcode); a payload
    /// longer than control frames may carry is cut to 125 bytes.
    static func controlFrame(_ firstByte: UInt8, payload: [UInt8]) -> [UInt8] {
        let kept = payload.prefix(125)
        return [firstByte, UInt8(kept.count)] + kept
    }

    /// A whole, unmasked text frame carrying `text` (at most 125 bytes of UTF-8).
    static func textFrame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        precondition(payload.count < 126, "a short text frame holds 125 bytes at most")
        return [0x81, UInt8(payload.count)] + payload
    }

    /// A close frame with `code` and `reason`.
    static func closeFrame(_ code: UInt16, reason: String = "") -> [UInt8] {
        controlFrame(0x88, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8))
    }
}
