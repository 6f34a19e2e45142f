/// The `/frame-echo` route's protocol: every frame a client sends comes back as it was
/// (same FIN, RSV and opcode bits, payload unmasked), pings get pongs, and a close frame
/// is echoed and ends the connection. Frame by frame, so fragments and compressed
/// messages echo without being reassembled, and the server is not what a bulk benchmark
/// measures.
///
/// A pure value: feed it bytes, get back the bytes to write.
struct FrameEcho {
    private var reader = ClientFrameReader()
    private var closed = false

    /// Takes bytes from the client; returns the bytes to send back, and whether the
    /// client's close frame has been echoed.
    mutating func receive(_ bytes: UnsafeRawBufferPointer) -> (reply: [UInt8], closed: Bool) {
        guard !closed else { return ([], true) }
        reader.append(bytes)
        var reply: [UInt8] = []
        while let frame = reader.nextFrame() {
            let first = frame.opcode == 0x9 ? 0x8A : frame.firstByte
            Self.appendHeader(first, length: frame.payload.count, to: &reply)
            reply += frame.payload
            if frame.opcode == 0x8 {
                closed = true
                break
            }
        }
        return (reply, closed)
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
