/// Splits incoming bytes into frame headers and payload pieces (RFC 6455 section 5.2),
/// over any chunk boundary, without copying payload.
///
/// Each call to ``next(from:)`` takes bytes from the front of `input` and returns one
/// piece: a header, then its payload as one or more pieces (views into `input`, valid
/// until the caller's buffer changes), the last one marked `endOfFrame`. A frame with no
/// payload still gets one empty piece, so every frame ends the same way.
///
/// Every rule that a header alone can break fails here, as soon as the header's first
/// two bytes arrive where possible: RSV2 or RSV3 set, a reserved opcode, a masked frame
/// (servers never mask), a fragmented control frame or one over 125 bytes, and a 64-bit
/// length with its top bit set. Rules that need the message (continuations, RSV1) belong
/// to ``MessageAssembler``.
package struct FrameDecoder {
    package enum Piece {
        case header(FrameHeader)
        case payload(UnsafeRawBufferPointer, endOfFrame: Bool)
    }

    /// Header bytes of a header split across chunks (at most 10: servers send no mask).
    private var pendingHeader: [UInt8] = []
    /// Payload bytes of the current frame not yet handed out; `nil` between frames.
    private var remainingPayload: UInt64?

    package init() {}

    /// The next piece from the front of `input`, or `nil` when `input` is used up before
    /// a whole piece (a partial header is kept for the next call).
    package mutating func next(from input: inout UnsafeRawBufferPointer) throws(ProtocolFailure) -> Piece? {
        if let remaining = remainingPayload {
            if remaining == 0 {
                remainingPayload = nil
                return .payload(UnsafeRawBufferPointer(start: nil, count: 0), endOfFrame: true)
            }
            guard !input.isEmpty else { return nil }
            let count = Int(min(UInt64(input.count), remaining))
            let piece = UnsafeRawBufferPointer(rebasing: input[..<count])
            input = UnsafeRawBufferPointer(rebasing: input[count...])
            let left = remaining - UInt64(count)
            remainingPayload = left == 0 ? nil : left
            return .payload(piece, endOfFrame: left == 0)
        }
        guard !input.isEmpty else { return nil }
        if pendingHeader.isEmpty, let (header, length) = try Self.decodeHeader(input) {
            input = UnsafeRawBufferPointer(rebasing: input[length...])
            remainingPayload = header.payloadLength
            return .header(header)
        }
        // A header split across chunks: gather just enough bytes for it.
        while !input.isEmpty {
            pendingHeader.append(input[0])
            input = UnsafeRawBufferPointer(rebasing: input[1...])
            let decoded = pendingHeader.withUnsafeBytes { bytes in
                Result { () throws(ProtocolFailure) in try Self.decodeHeader(bytes) }
            }
            if let (header, _) = try decoded.get() {
                pendingHeader.removeAll(keepingCapacity: true)
                remainingPayload = header.payloadLength
                return .header(header)
            }
        }
        return nil
    }

    /// Decodes a header from the start of `bytes`: the header and its length, `nil` when
    /// `bytes` holds only part of it, or the rule it breaks.
    private static func decodeHeader(_ bytes: UnsafeRawBufferPointer) throws(ProtocolFailure) -> (FrameHeader, Int)? {
        guard bytes.count >= 1 else { return nil }
        let first = bytes[0]
        if first & 0x30 != 0 { throw .protocolError("a frame has RSV2 or RSV3 set") }
        guard let opcode = FrameOpcode(rawValue: first & 0x0F) else {
            throw .protocolError("a frame has the reserved opcode \(first & 0x0F)")
        }
        let isFinal = first & 0x80 != 0
        if opcode.isControl, !isFinal { throw .protocolError("a control frame is fragmented") }
        guard bytes.count >= 2 else { return nil }
        let second = bytes[1]
        if second & 0x80 != 0 { throw .protocolError("the server sent a masked frame") }
        let shortLength = second & 0x7F
        if opcode.isControl, shortLength > 125 { throw .protocolError("a control frame is longer than 125 bytes") }
        let length: UInt64
        let headerLength: Int
        switch shortLength {
        case 126:
            guard bytes.count >= 4 else { return nil }
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            headerLength = 4
        case 127:
            guard bytes.count >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 2..<10 { value = value << 8 | UInt64(bytes[index]) }
            if value & (1 << 63) != 0 { throw .protocolError("a frame length has its most significant bit set") }
            length = value
            headerLength = 10
        default:
            length = UInt64(shortLength)
            headerLength = 2
        }
        let header = FrameHeader(isFinal: isFinal, isCompressed: first & 0x40 != 0, opcode: opcode, payloadLength: length)
        return (header, headerLength)
    }
}
