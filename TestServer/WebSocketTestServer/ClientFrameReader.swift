import WebSocketCore
import WebSocketStreams

/// Reads the frames a client sends on a raw route: just enough framing to see its close
/// frame and count its pongs (hostile routes), or to echo every frame (`/frame-echo`).
/// Client frames are always masked; payloads are unmasked eight bytes at a time.
///
/// A pure value: feed it bytes as they arrive with ``append(_:)`` and take complete frames
/// with ``nextFrame()``.
struct ClientFrameReader {
    /// One frame from the client, unmasked.
    struct Frame: Equatable {
        /// The frame's first byte as sent: FIN, RSV1-3 and the opcode.
        var firstByte: UInt8
        var payload: [UInt8]
        /// Whether the frame was masked, as every client frame must be.
        var masked = true

        var fin: Bool { firstByte & 0x80 != 0 }
        var opcode: UInt8 { firstByte & 0x0F }
    }

    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already consumed.
    private var position = 0

    /// Adds bytes that arrived.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if position > 0, position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        } else if position > 1 << 16, position * 2 > buffer.count {
            // A long-lived connection whose reads end inside frames: drop what was read
            // (only once it is most of the buffer, so the copy stays amortized).
            buffer.removeFirst(position)
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or nil until more bytes arrive. Frames declaring more than
    /// 16 MiB are not buffered (nil forever): a hostile route never needs them.
    mutating func nextFrame() -> Frame? {
        let available = buffer.count - position
        guard available >= 2 else { return nil }
        let first = buffer[position]
        let second = buffer[position + 1]
        var headerLength = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[position + 2]) << 8 | Int(buffer[position + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 2..<10 { value = value << 8 | UInt64(buffer[position + index]) }
            guard value <= 16 * 1024 * 1024 else { return nil }
            length = Int(value)
            headerLength = 10
        }
        let masked = second & 0x80 != 0
        let maskLength = masked ? 4 : 0
        guard available >= headerLength + maskLength + length else { return nil }
        let maskStart = position + headerLength
        let payloadStart = maskStart + maskLength
        var payload = Array(buffer[payloadStart..<(payloadStart + length)])
        if masked {
            let key = (buffer[maskStart], buffer[maskStart + 1], buffer[maskStart + 2], buffer[maskStart + 3])
            payload.withUnsafeMutableBytes { WebSocketMasking.unmask($0, key: key) }
        }
        position = payloadStart + length
        return Frame(firstByte: first, payload: payload, masked: masked)
    }

    /// Bytes appended and not yet taken as frames: the start of an incomplete frame, or
    /// one ``nextFrame()`` will not buffer.
    var unconsumedByteCount: Int { buffer.count - position }
}
