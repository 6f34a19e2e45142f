import DequeModule
import FoundationEssentials
import WebSocketCore

/// The outgoing side of one connection's protocol: the messages and control frames to
/// send, encoded into whatever output memory the caller offers.
///
/// ``fill(_:)`` writes as many whole headers and masked payload bytes as fit, in order:
/// control frames first (they may go between the fragments of a message, never inside a
/// frame), then message data, then, once no message is left, the close frame. A message
/// longer than ``maxFramePayload`` goes out as several frames so control frames are not
/// held up behind it; a frame's payload may be spread over several calls, so memory stays
/// bounded whatever the message size. Each frame gets a fresh masking key.
///
/// Confined to the connection's loop thread (it may own a zlib stream).
package struct FrameWriter {
    /// The largest frame payload written; larger messages become fragments.
    static let maxFramePayload = 1 << 20
    /// Messages shorter than this go out uncompressed unless the configuration says
    /// otherwise (``WebSocketCompression/threshold``); RFC 7692 lets every message choose.
    static let defaultCompressionThreshold = WebSocketCompression().threshold

    /// The message being written.
    private struct Outgoing {
        var message: WebSocketMessage
        /// A whole message, or where the piece of a streamed one sits.
        var position = OutgoingMessage.Position.whole
        /// The deflated payload, when the message is compressed.
        var compressed: [UInt8]?
        /// Payload bytes already written.
        var offset = 0
        /// Where the current frame's payload starts and ends (`frameEnd == offset` between frames).
        var frameStart = 0
        var frameEnd = 0
        var key = MaskingKey(bits: 0)

        var payloadCount: Int { compressed?.count ?? message.byteCount }

        /// The opcode of the first frame.
        var opcode: FrameOpcode { OutgoingMessage(message: message, position: position).opcode }

        /// The kind of message this is (a piece of).
        var kind: WebSocketMessageKind {
            switch position {
            case .first(let kind), .last(let kind): kind
            case .whole, .middle: message.kind
            }
        }
    }

    private var messages = Deque<OutgoingMessage>()
    private var controlFrames = Deque<(opcode: FrameOpcode, payload: [UInt8])>()
    private var outgoing: Outgoing?
    private var close: CloseFrame?
    /// The close frame has been encoded; nothing follows it.
    private(set) var closeWritten = false
    private var keys = MaskingKeySource()
    private let deflater: MessageDeflater?
    /// Messages shorter than this are not compressed.
    let compressionThreshold: Int
    /// Payload bytes of data messages encoded so far (before compression).
    private(set) var messageBytesWritten = 0
    /// Data messages encoded since the metrics last took them (``takeWrittenTally()``).
    private var tally = WrittenTally()
    /// The messages whose last byte the latest ``fill(_:)`` encoded, each with the offset in
    /// that fill's output just past it (for ``DeliveryLedger``).
    private(set) var completedInFill: [(end: Int, message: WebSocketMessage)] = []
    /// Where the close frame ended in the latest fill's output, when that fill wrote it.
    private(set) var closeEndInFill: Int?

    package init(deflater: MessageDeflater? = nil, threshold: Int = FrameWriter.defaultCompressionThreshold) {
        self.deflater = deflater
        compressionThreshold = threshold
    }

    /// A writer masking with `keys` (``MaskingKeySource/seeded(_:)`` in tests and the simulator).
    init(deflater: MessageDeflater?, threshold: Int, keys: MaskingKeySource) {
        self.init(deflater: deflater, threshold: threshold)
        self.keys = keys
    }

    /// Messages queued or partly written: nothing more of them can be sent after the socket is gone.
    var unwrittenMessages: [WebSocketMessage] {
        abandoned + (outgoing.map { [$0.message] } ?? []) + messages.map(\.message)
    }

    /// Messages dropped from the queue by ``enqueueCloseNow(_:)``: never sent.
    private var abandoned: [WebSocketMessage] = []
    /// Set by ``enqueueCloseNow(_:)``: a started message stops at the end of its current frame.
    private var closesAtFrameEnd = false

    /// Whether anything is waiting to be encoded.
    var hasWork: Bool {
        !closeWritten && (!controlFrames.isEmpty || outgoing != nil || !messages.isEmpty || close != nil)
    }

    /// Control frames waiting to be encoded.
    var pendingControlCount: Int { controlFrames.count }

    /// Whether the message queue is short enough to take more from the connection.
    var wantsMessages: Bool { !closeWritten && close == nil && messages.count < 64 }

    /// Whether messages may be compressed (permessage-deflate is on).
    var compresses: Bool { deflater != nil }

    /// Whether the compressor holds zlib's buffers now (freed between messages without
    /// context takeover).
    var holdsCompressorMemory: Bool { deflater?.holdsCompressorMemory ?? false }

    /// Whether a close frame is queued or written.
    var isClosing: Bool { close != nil || closeWritten }

    /// Queues a message behind those already queued; `compress: false` keeps it uncompressed.
    package mutating func enqueue(_ message: WebSocketMessage, compress: Bool = true) {
        enqueue(OutgoingMessage(message: message, options: SendOptions(mayCompress: compress)))
    }

    /// Queues a message behind those already queued.
    mutating func enqueue(_ message: OutgoingMessage) {
        guard !isClosing else { return }
        messages.append(message)
    }

    /// Queues a ping or pong. A peer that floods pings while never reading could grow
    /// this without bound: past `limit` waiting pongs, the oldest are dropped (RFC 6455
    /// 5.5.3 lets an endpoint answer only the latest ping).
    mutating func enqueueControl(_ opcode: FrameOpcode, payload: [UInt8], limit: Int = 256) {
        guard !closeWritten else { return }
        if opcode == .pong, controlFrames.count >= limit, let index = controlFrames.firstIndex(where: { $0.opcode == .pong }) {
            controlFrames.remove(at: index)
        }
        controlFrames.append((opcode, payload))
    }

    /// Queues the close frame: it goes out after every queued message. Only the first counts.
    mutating func enqueueClose(_ frame: CloseFrame) {
        guard close == nil, !closeWritten else { return }
        close = frame
    }

    /// Queues the close frame ahead of any message not started yet (failing or answering
    /// a close: what is queued will never be sent, and counts as unsent). A frame in
    /// progress is finished first; the rest of its message is not sent and counts as unsent.
    mutating func enqueueCloseNow(_ frame: CloseFrame) {
        guard close == nil, !closeWritten else { return }
        close = frame
        closesAtFrameEnd = true
        if let current = outgoing, current.offset == current.frameEnd {
            outgoing = nil
            abandoned.append(current.message)
        }
        abandoned.append(contentsOf: messages.map(\.message))
        messages.removeAll()
    }

    /// Encodes what fits into `buffer`; returns the bytes written (0 when nothing fits or
    /// nothing is waiting).
    package mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
        completedInFill.removeAll(keepingCapacity: true)
        closeEndInFill = nil
        guard let base = buffer.baseAddress else { return 0 }
        var used = 0
        while !closeWritten {
            let room = buffer.count - used
            if var current = outgoing, current.offset < current.frameEnd {
                // Inside a frame: more of its payload.
                let count = min(room, current.frameEnd - current.offset)
                guard count > 0 else { break }
                Self.copyPayload(of: current, range: current.offset..<current.offset + count, to: base + used)
                current.offset += count
                used += count
                if current.offset == current.payloadCount {
                    finished(current, at: used)
                    outgoing = nil
                } else {
                    outgoing = current
                }
                continue
            }
            if let control = controlFrames.first {
                let length = FrameEncoder.headerLength(payloadLength: control.payload.count) + control.payload.count
                guard length <= room else { break }
                let key = keys.next()
                _ = control.payload.withUnsafeBytes {
                    FrameEncoder.writeFrame(into: base + used, opcode: control.opcode, payload: $0, key: key)
                }
                used += length
                controlFrames.removeFirst()
                continue
            }
            if outgoing == nil, let next = messages.popFirst() {
                outgoing = start(next)
            }
            if let current = outgoing, closesAtFrameEnd {
                // Its frame is done and the close goes next: the rest of the message is never sent.
                abandoned.insert(current.message, at: 0)
                outgoing = nil
                continue
            }
            if var current = outgoing {
                // A new frame of the current message: needs room for its header and some payload.
                guard room >= FrameEncoder.maxHeaderLength + 1 else { break }
                let isFirst = current.offset == 0
                let length = min(Self.maxFramePayload, current.payloadCount - current.offset)
                let isFinal = current.offset + length == current.payloadCount && current.position.endsMessage
                let opcode: FrameOpcode = isFirst ? current.opcode : .continuation
                current.key = keys.next()
                used += FrameEncoder.writeHeader(
                    into: base + used, opcode: opcode, isFinal: isFinal,
                    isCompressed: isFirst && current.compressed != nil, payloadLength: length, key: current.key)
                current.frameStart = current.offset
                current.frameEnd = current.offset + length
                if length == 0 {
                    finished(current, at: used)
                    outgoing = nil
                } else {
                    outgoing = current
                }
                continue
            }
            if let close {
                let payload = close.payload
                let length = FrameEncoder.headerLength(payloadLength: payload.count) + payload.count
                guard length <= room else { break }
                let key = keys.next()
                _ = payload.withUnsafeBytes { FrameEncoder.writeFrame(into: base + used, opcode: .close, payload: $0, key: key) }
                used += length
                closeWritten = true
                closeEndInFill = used
                controlFrames.removeAll()
            }
            break
        }
        return used
    }

    /// Data messages written whole, by type, and their payload bytes (before compression).
    struct WrittenTally {
        var textMessages = 0
        var binaryMessages = 0
        var bytes = 0
    }

    /// What was written since the last call (the metrics take it once per flush).
    mutating func takeWrittenTally() -> WrittenTally {
        defer { tally = WrittenTally() }
        return tally
    }

    /// The last byte of `outgoing` has been encoded, ending at `end` in this fill's output.
    /// The pieces of a streamed message count as one message, when its last is written.
    private mutating func finished(_ outgoing: Outgoing, at end: Int) {
        let message = outgoing.message
        completedInFill.append((end, message))
        let count = message.byteCount
        messageBytesWritten += count
        tally.bytes += count
        guard outgoing.position.endsMessage else { return }
        if outgoing.kind == .text { tally.textMessages += 1 } else { tally.binaryMessages += 1 }
    }

    /// Starts a message: compresses it whole when compression is on, the sender did not opt
    /// out and the message reaches the threshold.
    private mutating func start(_ next: OutgoingMessage) -> Outgoing {
        let message = next.message
        var outgoing = Outgoing(message: message, position: next.position)
        if let deflater, next.options.mayCompress, next.position == .whole, message.byteCount >= compressionThreshold {
            var compressed: [UInt8] = []
            compressed.reserveCapacity(message.byteCount / 2 + 64)
            let moreFollow = !messages.isEmpty
            message.withPayloadBytes { deflater.compress($0, into: &compressed, moreFollow: moreFollow) }
            outgoing.compressed = compressed
        }
        return outgoing
    }

    /// Masks `range` of the message's payload into `destination`, continuing the frame's key phase.
    private static func copyPayload(of outgoing: Outgoing, range: Range<Int>, to destination: UnsafeMutableRawPointer) {
        let frameOffset = range.lowerBound - outgoing.frameStart
        let copy = { (all: UnsafeRawBufferPointer) in
            outgoing.key.copyMasked(UnsafeRawBufferPointer(rebasing: all[range]), to: destination, offset: frameOffset)
        }
        if let compressed = outgoing.compressed {
            compressed.withUnsafeBytes(copy)
        } else {
            outgoing.message.withPayloadBytes(copy)
        }
    }
}
