import CLibWebSockets
import WebSocketStreams

/// How a handler's message is cut into libwebsockets writes: a frame for each size asked
/// for, then the rest; the flags say which carries the opcode and which ends the message.
enum OutgoingFrames {
    /// One frame's payload and its `lws_write` flags.
    struct Frame: Sendable {
        var payload: [UInt8]
        var flags: UInt32
    }

    /// `message` as frames of `sizes` bytes, then one with the rest (if any is left, or if
    /// there is no other frame); with `final` false the rest is left out and no frame
    /// carries FIN.
    static func fragments(of message: WebSocketMessage, sizes: [Int], final: Bool) -> [Frame] {
        let (bytes, opcode): ([UInt8], UInt32) = switch message {
        case .text(let text): (Array(text.utf8), LWS_WRITE_TEXT.rawValue)
        case .binary(let data): (Array(data), LWS_WRITE_BINARY.rawValue)
        }
        var frames: [Frame] = []
        var offset = 0
        for size in sizes {
            let end = min(bytes.count, offset + max(0, size))
            frames.append(Frame(payload: Array(bytes[offset..<end]), flags: 0))
            offset = end
        }
        // The rest, unless the sizes covered the message: an empty final continuation is
        // where libwebsockets' deflate would have nothing to flush.
        if final, offset < bytes.count || frames.isEmpty { frames.append(Frame(payload: Array(bytes[offset...]), flags: 0)) }
        for index in frames.indices {
            var flags = index == 0 ? opcode : LWS_WRITE_CONTINUATION.rawValue
            if !final || index < frames.count - 1 { flags |= LWS_WRITE_NO_FIN.rawValue }
            frames[index].flags = flags
        }
        return frames
    }
}
