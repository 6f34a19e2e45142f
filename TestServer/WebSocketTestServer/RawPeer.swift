import CLibWebSockets
import Glibc
import WebSocketStreams

/// A connection the test server drives byte by byte after taking its socket from lws
/// (see `ServerLoop.takeOver`): for handshakes that come late or never, and for the
/// `/hostile/` routes, which send what no well-behaved server would.
///
/// Only the server's service thread touches it.
final class RawPeer {
    let id: Int
    let route: ServerRoute
    let key: String
    let recorder: ServerRecorder
    private var sentClose = false
    /// What the client sent, on hostile routes.
    private var reader = ClientFrameReader()
    /// `slowloris`: the 101 being trickled, and how much of it went out.
    private var trickle: (bytes: [UInt8], sent: Int)?
    /// `/frame-echo`: what the client sent, turned into the frames to send back.
    private var echo = FrameEcho()

    init(id: Int, route: ServerRoute, key: String, recorder: ServerRecorder) {
        self.id = id
        self.route = route
        self.key = key
        self.recorder = recorder
    }

    /// lws adopted the socket.
    func adopted(_ wsi: OpaquePointer) -> Int32 {
        switch route {
        case .slow(let milliseconds):
            lws_set_timer_usecs(wsi, max(1, Int64(milliseconds) * 1000))
        case .uncompressed:
            // permessage-deflate accepted, yet frames sent without RSV1 (allowed by RFC 7692).
            guard let upgrade = upgradeResponse(extensions: "permessage-deflate") else { return -1 }
            let text: [UInt8] = [0x81, 0x0C] + Array("uncompressed".utf8)
            let pong: [UInt8] = [0x8A, 0x03] + Array("abc".utf8)
            let close: [UInt8] = [0x88, 0x02, 0x03, 0xE8]
            sentClose = true
            return write(wsi, Array(upgrade.utf8) + text + pong + close) ? 0 : -1
        case .frameEcho:
            guard let upgrade = upgradeResponse() else { return -1 }
            return write(wsi, Array(upgrade.utf8)) ? 0 : -1
        case .hugeHeaders:
            // A header block that never ends: 1 MiB of lines and no blank line.
            let line = Array("X-Filler: \(String(repeating: "a", count: 1000))\r\n".utf8)
            var bytes = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n".utf8)
            for _ in 0..<(1 << 20) / line.count { bytes += line }
            lws_set_timer_usecs(wsi, 10_000_000)
            return write(wsi, bytes) ? 0 : -1
        case .hostile(let behaviour):
            guard let upgrade = upgradeResponse() else { return -1 }
            if case .slowloris(let milliseconds) = behaviour {
                trickle = (Array(upgrade.utf8), 0)
                lws_set_timer_usecs(wsi, Int64(milliseconds) * 1000)
                return 0
            }
            guard write(wsi, Array(upgrade.utf8) + behaviour.bytesAfterHandshake) else { return -1 }
            // Routes that may leave the client waiting for bytes never sent drop TCP soon;
            // the others wait for the client's close, with a safety net.
            lws_set_timer_usecs(wsi, behaviour.dropsAfterWriting ? 300_000 : 10_000_000)
            return 0
        default:
            break
        }
        return 0
    }

    /// The next byte of a trickled 101 (`slowloris`), or the end of a hostile connection.
    private func hostileTimerFired(_ wsi: OpaquePointer, _ behaviour: HostileBehaviour) -> Int32 {
        guard case .slowloris(let milliseconds) = behaviour, let (bytes, sent) = trickle, sent < bytes.count else {
            return -1
        }
        guard write(wsi, [bytes[sent]]) else { return -1 }
        trickle = (bytes, sent + 1)
        lws_set_timer_usecs(wsi, Int64(milliseconds) * 1000)
        return 0
    }

    /// Records what the client sent on a hostile route and answers its pings (so a client
    /// can measure a round trip through a flood); its close frame ends the connection.
    private func hostileReceived(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let input, length > 0 else { return 0 }
        reader.append(UnsafeRawBufferPointer(start: input, count: length))
        while let frame = reader.nextFrame() {
            switch frame.opcode {
            case 0x8:
                let code: WebSocketCloseCode? = frame.payload.count >= 2
                    ? WebSocketCloseCode(rawValue: UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
                    : .noStatusReceived
                let reason = frame.payload.count > 2 ? String(decoding: frame.payload[2...], as: UTF8.self) : ""
                recorder.change(id) { record in
                    record.closeCodeReceived = code
                    record.closeReasonReceived = reason
                    record.closeReceivedAt = .now
                }
                return -1
            case 0x9:
                guard write(wsi, [0x8A, UInt8(frame.payload.count)] + frame.payload) else { return -1 }
            case 0xA:
                recorder.change(id) { $0.pongsReceived += 1 }
            case 0x1, 0x2, 0x0:
                recorder.change(id) { record in
                    if frame.fin { record.messagesReceived += 1 }
                    record.bytesReceived += frame.payload.count
                }
            default:
                break
            }
        }
        return 0
    }

    /// A valid `101 Switching Protocols` answer to this connection's key.
    private func upgradeResponse(extensions: String? = nil) -> String? {
        var accept = [CChar](repeating: 0, count: 64)
        guard wss_websocket_accept(key, &accept, accept.count) == 1 else { return nil }
        let acceptText = accept.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(acceptText)\r\n"
        if let extensions { response += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        return response + "\r\n"
    }

    func handle(_ wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_TIMER:
            if case .hostile(let behaviour) = route { return hostileTimerFired(wsi, behaviour) }
            if case .frameEcho = route { return -1 }
            guard case .slow = route else { return 0 }
            // The late answer: a valid upgrade, then a close frame (1000, "slow").
            guard let response = upgradeResponse() else { return -1 }
            let closeFrame: [UInt8] = [0x88, 0x06, 0x03, 0xE8] + Array("slow".utf8)
            sentClose = true
            return write(wsi, Array(response.utf8) + closeFrame) ? 0 : -1
        case LWS_CALLBACK_RAW_RX:
            if case .hostile = route { return hostileReceived(wsi, input, length) }
            if case .frameEcho = route, let input {
                let (reply, closed) = echo.receive(UnsafeRawBufferPointer(start: input, count: length))
                if !reply.isEmpty, !write(wsi, reply) { return -1 }
                if closed {
                    // The close was echoed: end TCP once lws has written it.
                    lws_set_timer_usecs(wsi, 50_000)
                    sentClose = true
                }
                return 0
            }
            // The client's answer to our close (or anything after it) ends the connection.
            return sentClose ? -1 : 0
        case LWS_CALLBACK_RAW_CLOSE, LWS_CALLBACK_WSI_DESTROY:
            recorder.change(id) { record in
                if record.closedAt == nil { record.closedAt = .now }
            }
        default:
            break
        }
        return 0
    }

    private func write(_ wsi: OpaquePointer, _ bytes: [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: ServerConnection.headroom) + bytes
        let count = bytes.count
        return buffer.withUnsafeMutableBufferPointer { pointer in
            wss_write(wsi, pointer.baseAddress! + ServerConnection.headroom, count, LWS_WRITE_HTTP.rawValue) >= 0
        }
    }
}
