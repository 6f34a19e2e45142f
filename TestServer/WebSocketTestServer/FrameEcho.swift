import WebSocketStreams

/// The `/frame-echo` route's protocol: every frame a client sends comes back as it was
/// (same FIN, RSV and opcode bits, payload unmasked), pings get pongs, and a close frame
/// is echoed and ends the connection. Frame by frame, so fragments and compressed
/// messages echo without being reassembled; unmasking eight bytes at a time, so the
/// server is not what a bulk benchmark measures.
///
/// A pure value: feed it bytes, get back the bytes to write.
struct FrameEcho {
    private var buffer: [UInt8] = []
    private var closed = false

    /// Takes bytes from the client; returns the bytes to send back, and whether the
    /// client's close frame has been echoed.
    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> (reply: [UInt8], closed: Bool) {
        guard !closed else { return ([], true) }
        buffer.append(contentsOf: bytes)
        var reply: [UInt8] = []
        var position = 0
        while let frame = Self.frame(in: buffer, at: position) {
            let first = buffer[position]
            let opcode = first & 0x0F
            let payloadRange = frame.payload
            buffer.withUnsafeMutableBytes { all in
                WebSocketMasking.unmask(UnsafeMutableRawBufferPointer(rebasing: all[payloadRange]), key: frame.key)
            }
            let header = opcode == 0x9 ? 0x8A : first
            Self.appendHeader(header, length: payloadRange.count, to: &reply)
            reply.append(contentsOf: buffer[payloadRange])
            position = payloadRange.upperBound
            if opcode == 0x8 {
                closed = true
                break
            }
        }
        buffer.removeFirst(position)
        return (reply, closed)
    }

    /// A complete frame starting at `position`: its masking key and payload range.
    private static func frame(in buffer: [UInt8], at position: Int) -> (key: (UInt8, UInt8, UInt8, UInt8), payload: Range<Int>)? {
        let available = buffer.count - position
        guard available >= 2 else { return nil }
        var length = Int(buffer[position + 1] & 0x7F)
        var headerLength = 2
        if length == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[position + 2]) << 8 | Int(buffer[position + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[position + $1]) }
            headerLength = 10
        }
        let masked = buffer[position + 1] & 0x80 != 0
        let keyStart = position + headerLength
        let payloadStart = keyStart + (masked ? 4 : 0)
        guard buffer.count - payloadStart >= length else { return nil }
        let key = masked ? (buffer[keyStart], buffer[keyStart + 1], buffer[keyStart + 2], buffer[keyStart + 3]) : (0, 0, 0, 0)
        return (key, payloadStart..<payloadStart + length)
    }

    /// A server frame header (unmasked) for `length` payload bytes.
    private static func appendHeader(_ first: UInt8, length: Int, to bytes: inout [UInt8]) {
        bytes.append(first)
        switch length {
        case ..<126:
            bytes.append(UInt8(length))
        case ..<65536:
            bytes += [126, UInt8(length >> 8), UInt8(length & 0xFF)]
        default:
            bytes.append(127)
            bytes += (0..<8).map { UInt8(truncatingIfNeeded: length >> (56 - 8 * $0)) }
        }
    }
}
