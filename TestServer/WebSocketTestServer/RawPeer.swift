import CLibWebSockets
import Glibc

/// A connection the test server drives byte by byte after taking its socket from lws
/// (see `ServerLoop.takeOver`): for handshakes that come late or never.
///
/// Only the server's service thread touches it.
final class RawPeer {
    let id: Int
    let route: ServerRoute
    let key: String
    let recorder: ServerRecorder
    private var sentClose = false

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
        default:
            break
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
            guard case .slow = route else { return 0 }
            // The late answer: a valid upgrade, then a close frame (1000, "slow").
            guard let response = upgradeResponse() else { return -1 }
            let closeFrame: [UInt8] = [0x88, 0x06, 0x03, 0xE8] + Array("slow".utf8)
            sentClose = true
            return write(wsi, Array(response.utf8) + closeFrame) ? 0 : -1
        case LWS_CALLBACK_RAW_RX:
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
