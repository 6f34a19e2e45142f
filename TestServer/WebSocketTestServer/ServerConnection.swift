import CLibWebSockets
import DequeModule
import FoundationEssentials
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// One WebSocket connection of the test server, served by its route.
///
/// Only the server's loop thread touches it (every method is called from an lws
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
    /// The most a message's first frame header makes the server set aside before its
    /// bytes arrive, and the largest buffer kept for the next message.
    static let largestReservation = 16 * 1024 * 1024

    let id: Int
    let route: ServerRoute
    let recorder: ServerRecorder
    var outbound = Deque<Frame>()
    var outboundBytes = 0
    /// Why reading the socket is paused; it reads while this is empty.
    var readingPauses: ReadingPauses = []
    /// The message being received: `LWS_PRE` bytes of header room, then what has arrived.
    /// (Internal for ``discardInputAtDrop(_:)``.)
    var partial: [UInt8] = []
    /// An empty buffer with room, from an echo written, for the next message received.
    var spareBuffer: [UInt8] = []
    private(set) var partialIsBinary = false
    var pushed = 0
    /// Bytes of message `pushed` already written (fragmented pushes span writable passes).
    var pushOffset = 0

    /// Whether permessage-deflate is active: lws may then still be draining a large
    /// compressed message after `lws_write` returns.
    let compressed: Bool
    /// Whether received text messages are kept in the connection's record.
    let recordTexts: Bool
    /// The connection's wsi while it exists.
    var wsi: OpaquePointer?
    /// How the server ends the connection at its next timer callback, once asked
    /// (``goAway(_:code:)``, a handler's `close` or `drop`).
    var ending: Ending?
    /// An ending asked for while frames were still queued: it comes once they are written.
    var endingAfterWrites: Ending?
    /// A handler's bridge, on a handler's path.
    var handler: HandlerLink?
    /// `/echo?delay=MS`: replies held until the connection's timer fires.
    var delayedReplies: [Frame] = []

    init(id: Int, route: ServerRoute, recorder: ServerRecorder, compressed: Bool, recordTexts: Bool) {
        self.id = id
        self.route = route
        self.recorder = recorder
        self.compressed = compressed
        self.recordTexts = recordTexts
    }

    /// The frame being written, and how much of its payload is written.
    var current: (frame: Frame, offset: Int)?

    // MARK: - Lifecycle

    /// The handshake completed: start the route's behaviour.
    func established(_ wsi: OpaquePointer, headersJSON: String) {
        switch route {
        case .push:
            lws_callback_on_writable(wsi)
        case .close(_, _, let after), .drop(let after):
            EventLoopThread.setTimer(of: wsi, after: .milliseconds(max(0, after)))
        case .stall(let resumeAfter):
            setReading(paused: true, for: .route, wsi)
            if let resumeAfter { EventLoopThread.setTimer(of: wsi, after: .milliseconds(max(0, resumeAfter))) }
        case .headers:
            enqueue(wsi, payload: Array(headersJSON.utf8), binary: false)
        case .badUTF8(let split):
            // "héllo" then a 4-byte lead (F0 9F) followed by '(' : invalid at the '('.
            let first: [UInt8] = [0x68, 0xC3, 0xA9, 0x6C, 0x6C, 0x6F, 0xF0, 0x9F]
            let second: [UInt8] = [0x28, 0x21]
            if split {
                enqueue(wsi, payload: first, flags: LWS_WRITE_TEXT.rawValue | LWS_WRITE_NO_FIN.rawValue)
                enqueue(wsi, payload: second, flags: LWS_WRITE_CONTINUATION.rawValue)
            } else {
                enqueue(wsi, payload: first + second, binary: false)
            }
        case .echo, .reject, .slow, .hang, .uncompressed, .hostile, .frameEcho, .hugeHeaders, .tls, .handler:
            break
        }
    }

    /// Closes the connection with a close frame carrying `code` (the server is going away),
    /// at the connection's next timer callback: lws sends the frame as the callback returns -1.
    func goAway(_ wsi: OpaquePointer, code: UInt32) {
        ending = .close(code: UInt16(clamping: code), reason: "")
        EventLoopThread.setTimer(of: wsi, after: .microseconds(1))
    }

    /// Ends the connection as `ending` says once every queued frame is written: the same
    /// timer path as `/close`, `/drop` and ``goAway(_:code:)``.
    func requestEnding(_ ending: Ending, _ wsi: OpaquePointer) {
        guard self.ending == nil else { return }
        // A close handshake needs the client's answer read: whatever paused reading (a
        // handler that stopped, a full inbox) gives way now.
        if case .close = ending, !readingPauses.isEmpty {
            readingPauses = []
            lws_rx_flow_control(wsi, 1)
        }
        if current == nil, outbound.isEmpty {
            self.ending = ending
            EventLoopThread.setTimer(of: wsi, after: .microseconds(1))
        } else {
            endingAfterWrites = ending
            lws_callback_on_writable(wsi)
        }
    }

    /// Pauses or resumes reading the socket for `reason`; lws reads while no reason holds.
    func setReading(paused: Bool, for reason: ReadingPauses, _ wsi: OpaquePointer) {
        let wasPaused = !readingPauses.isEmpty
        if paused { readingPauses.insert(reason) } else { readingPauses.remove(reason) }
        if wasPaused != !readingPauses.isEmpty { lws_rx_flow_control(wsi, readingPauses.isEmpty ? 1 : 0) }
    }

    func timerFired(_ wsi: OpaquePointer) -> Int32 {
        switch ending {
        case .close(let code, let reason)?:
            var reason = reason
            reason.withUTF8 { wss_close_reason(wsi, UInt32(code), $0.baseAddress, min($0.count, 123)) }
            recorder.change(id) { record in
                record.closeCodeSent = WebSocketCloseCode(rawValue: code)
                record.closeReasonSent = reason
            }
            return -1
        case .drop?:
            // No close reason: lws drops the socket without a close frame; what the client
            // sent that was not read yet is counted as discarded at the drop first.
            discardInputAtDrop(wsi)
            return -1
        case nil:
            break
        }
        switch route {
        case .echo(let delay) where delay > 0:
            for reply in delayedReplies { enqueue(wsi, reply) }
            delayedReplies = []
            return 0
        case .close(let code, let reason, _):
            ending = .close(code: code, reason: reason)
            return timerFired(wsi)
        case .drop:
            ending = .drop
            return timerFired(wsi)
        case .stall(resumeAfterMilliseconds: .some):
            setReading(paused: false, for: .route, wsi)
            return 0
        default:
            return 0
        }
    }

    // MARK: - Receiving

    func receive(_ wsi: OpaquePointer, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        if partial.isEmpty {
            // The message is gathered behind lws's header room, so an echo is queued as it
            // is, without a copy, in the buffer of the last echo written when there is one;
            // else its first frame's length sizes the buffer (bounded: the length is the
            // client's word).
            swap(&partial, &spareBuffer)
            partialIsBinary = lws_frame_is_binary(wsi) != 0
            let announced = length + Int(lws_remaining_packet_payload(wsi))
            partial.reserveCapacity(Self.headroom + min(announced, Self.largestReservation))
            partial.append(contentsOf: repeatElement(0, count: Self.headroom))
        }
        if let input, length > 0 {
            partial.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        guard lws_is_final_fragment(wsi) != 0 else { return 0 }
        let message = Frame(bytes: partial, flags: partialIsBinary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue)
        partial = []
        let text = recordTexts && !partialIsBinary
            ? String(decoding: message.bytes[Self.headroom...], as: UTF8.self) : nil
        recorder.change(id) { record in
            record.messagesReceived += 1
            record.bytesReceived += message.payloadCount
            if let text { record.textsReceived.append(text) }
        }
        switch route {
        case .echo(let delay) where delay > 0:
            delayedReplies.append(message)
            EventLoopThread.setTimer(of: wsi, after: .milliseconds(delay))
        case .echo, .push, .headers, .close, .drop, .badUTF8, .stall(resumeAfterMilliseconds: .some):
            enqueue(wsi, message)
        case .handler:
            let payload = message.bytes[Self.headroom...]
            let delivered: WebSocketMessage = partialIsBinary
                ? .binary(Data(payload)) : .text(String(decoding: payload, as: UTF8.self))
            if handler?.deliver(delivered) == .pauseReading { setReading(paused: true, for: .handlerInbox, wsi) }
        case .stall(resumeAfterMilliseconds: nil), .reject, .slow, .hang, .uncompressed, .hostile, .frameEcho, .hugeHeaders, .tls:
            break
        }
        return 0
    }
}

extension ServerConnection {
    /// How the server ends a connection itself.
    enum Ending: Sendable {
        /// A close frame with `code` and `reason`, then the close handshake.
        case close(code: UInt16, reason: String)
        /// TCP closed without a close frame.
        case drop
    }

    /// Why the server stopped reading a connection's socket.
    struct ReadingPauses: OptionSet, Sendable {
        let rawValue: UInt8
        /// More than ``outboundHighWatermark`` bytes wait to be written to the client.
        static let outboundBacklog = ReadingPauses(rawValue: 1 << 0)
        /// The route stops reading (`/stall`).
        static let route = ReadingPauses(rawValue: 1 << 1)
        /// A handler has too much unread (``HandlerLink/inboxHighWater``).
        static let handlerInbox = ReadingPauses(rawValue: 1 << 2)
        /// A handler asked (`stopReading()`).
        static let handlerAsked = ReadingPauses(rawValue: 1 << 3)
    }
}
