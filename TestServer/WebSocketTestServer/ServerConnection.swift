import CLibWebSockets
import DequeModule
import Glibc

/// One WebSocket connection of the test server, served by its route.
///
/// Only the server's service thread touches it (every method is called from an lws
/// callback), so it needs no lock; what tests read goes through ``ServerRecorder``.
final class ServerConnection {
    /// A frame waiting to be written: `LWS_PRE` bytes of headroom, then the payload.
    struct Frame {
        var bytes: [UInt8]
        var flags: UInt32
        var payloadCount: Int { bytes.count - ServerConnection.headroom }
    }

    static let headroom = wss_lws_pre()
    /// Outbound bytes beyond which the connection stops reading (a client that does not read
    /// its echoes must not make the server buffer without bound).
    static let outboundHighWatermark = 8 * 1024 * 1024
    static let writeBudget = 512 * 1024

    let id: Int
    let route: ServerRoute
    let recorder: ServerRecorder
    private var outbound = Deque<Frame>()
    private var outboundBytes = 0
    private var readingPaused = false
    private var partial: [UInt8] = []
    private var partialIsBinary = false
    private var pushed = 0

    init(id: Int, route: ServerRoute, recorder: ServerRecorder) {
        self.id = id
        self.route = route
        self.recorder = recorder
    }

    // MARK: - Lifecycle

    /// The handshake completed: start the route's behaviour.
    func established(_ wsi: OpaquePointer, headersJSON: String) {
        switch route {
        case .push:
            lws_callback_on_writable(wsi)
        case .close(_, _, let after), .drop(let after):
            lws_set_timer_usecs(wsi, max(1, Int64(after) * 1000))
        case .stall:
            lws_rx_flow_control(wsi, 0)
        case .headers:
            enqueue(wsi, payload: Array(headersJSON.utf8), binary: false)
        case .echo, .reject, .slow, .hang:
            break
        }
    }

    func timerFired(_ wsi: OpaquePointer) -> Int32 {
        switch route {
        case .close(let code, let reason, _):
            var reason = reason
            reason.withUTF8 { wss_close_reason(wsi, UInt32(code), $0.baseAddress, min($0.count, 123)) }
            return -1
        case .drop:
            // No close reason: lws drops the socket without a close frame.
            return -1
        default:
            return 0
        }
    }

    // MARK: - Receiving

    func receive(_ wsi: OpaquePointer, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        if partial.isEmpty { partialIsBinary = lws_frame_is_binary(wsi) != 0 }
        if let input, length > 0 {
            partial.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        guard lws_is_final_fragment(wsi) != 0 else { return 0 }
        let message = partial
        partial = []
        recorder.change(id) { record in
            record.messagesReceived += 1
            record.bytesReceived += message.count
        }
        switch route {
        case .echo, .push, .headers, .close, .drop:
            enqueue(wsi, payload: message, binary: partialIsBinary)
        case .stall, .reject, .slow, .hang:
            break
        }
        return 0
    }

    // MARK: - Writing

    private func enqueue(_ wsi: OpaquePointer, payload: [UInt8], binary: Bool) {
        var bytes = [UInt8](repeating: 0, count: Self.headroom)
        bytes.append(contentsOf: payload)
        outbound.append(Frame(bytes: bytes, flags: binary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue))
        outboundBytes += payload.count
        if outboundBytes > Self.outboundHighWatermark, !readingPaused {
            readingPaused = true
            lws_rx_flow_control(wsi, 0)
        }
        lws_callback_on_writable(wsi)
    }

    func writeable(_ wsi: OpaquePointer, pushBuffer: UnsafeMutableRawPointer, pushCapacity: Int) -> Int32 {
        var budget = Self.writeBudget
        if case .push(let count, let size, let binary) = route, pushed < count {
            let payload = pushBuffer + Self.headroom
            let size = min(size, pushCapacity)
            while pushed < count, budget > 0 {
                Self.fillPushPayload(payload, size: size, sequence: pushed, binary: binary)
                let flags = binary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue
                if wss_write(wsi, payload.assumingMemoryBound(to: UInt8.self), size, flags) < 0 { return -1 }
                pushed += 1
                budget -= max(size, 64)
                if lws_send_pipe_choked(wsi) != 0 { break }
            }
        }
        while budget > 0, var frame = outbound.popFirst() {
            let count = frame.payloadCount
            let result = frame.bytes.withUnsafeMutableBufferPointer { buffer in
                wss_write(wsi, buffer.baseAddress! + Self.headroom, count, frame.flags)
            }
            if result < 0 { return -1 }
            outboundBytes -= count
            budget -= max(count, 64)
            if lws_send_pipe_choked(wsi) != 0 { break }
        }
        if readingPaused, outboundBytes < Self.outboundHighWatermark / 4 {
            readingPaused = false
            lws_rx_flow_control(wsi, 1)
        }
        var more = !outbound.isEmpty
        if case .push(let count, _, _) = route, pushed < count { more = true }
        if more { lws_callback_on_writable(wsi) }
        return 0
    }

    /// The payload of pushed message `sequence`: binary messages start with the sequence
    /// number as 8 big-endian bytes, text ones with it as 10 decimal digits and a colon;
    /// the rest is filler. Clients use the prefix to check order and completeness.
    static func fillPushPayload(_ payload: UnsafeMutableRawPointer, size: Int, sequence: Int, binary: Bool) {
        if binary {
            var value = UInt64(sequence).bigEndian
            withUnsafeBytes(of: &value) { bytes in
                payload.copyMemory(from: bytes.baseAddress!, byteCount: min(8, size))
            }
            if size > 8 { memset(payload + 8, 0x61, size - 8) }
        } else {
            var digits = Array(String(sequence).utf8)
            digits = Array(repeating: UInt8(ascii: "0"), count: max(0, 10 - digits.count)) + digits + [UInt8(ascii: ":")]
            let prefix = min(digits.count, size)
            digits.withUnsafeBytes { payload.copyMemory(from: $0.baseAddress!, byteCount: prefix) }
            if size > prefix { memset(payload + prefix, 0x78, size - prefix) }
        }
    }
}
