import FoundationEssentials

// Streamed messages (``MessageAssembler/Streaming``): each piece of payload handed on as it
// arrives, text cut at code point boundaries, an empty piece at the end.
extension MessageAssembler {
    /// Hands on a piece of a streamed message (inflated first when compressed), and the
    /// empty piece that ends it.
    mutating func stream(
        _ bytes: UnsafeRawBufferPointer, of message: Partial, endOfMessage: Bool, into events: inout [InboundEvent]
    ) throws(ProtocolFailure) {
        if message.isCompressed {
            // Inflated a slice at a time, so a piece stays small however far the data
            // inflates (deflate reaches about 1,000:1): at most `streamedPieceTarget` plus
            // what one slice makes.
            var rest = bytes
            repeat {
                let slice = UnsafeRawBufferPointer(rebasing: rest.prefix(Self.streamedInflateSlice))
                rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(slice.count))
                try inflate(slice, endOfMessage: endOfMessage && rest.isEmpty)
                if payload.count >= Self.streamedPieceTarget || rest.isEmpty { try handOnInflated(of: message.kind, into: &events) }
            } while !rest.isEmpty
        } else {
            if message.kind == .text, !validator.validate(bytes) { throw .invalidPayload("invalid UTF-8 in a text message") }
            try handOn(bytes, of: message.kind, into: &events)
        }
        guard endOfMessage else { return }
        partial = nil
        if message.kind == .text {
            if !validator.isComplete || !carry.isEmpty { throw .invalidPayload("a text message ends inside a UTF-8 sequence") }
            events.append(.message(.text("")))
        } else {
            events.append(.message(.binary(Data())))
        }
    }

    /// Compressed input inflated per step when streaming: 1 KiB inflates to at most about 1 MiB.
    package static let streamedInflateSlice = 1024
    /// Inflated bytes gathered before they are handed on as a piece when streaming.
    package static let streamedPieceTarget = 64 * 1024

    /// Hands on what ``payload`` holds (inflated, validated), leaving it empty.
    private mutating func handOnInflated(of kind: Kind, into events: inout [InboundEvent]) throws(ProtocolFailure) {
        var inflated: [UInt8] = []
        swap(&inflated, &payload)
        let handedOn = inflated.withUnsafeBytes { piece in
            Result { () throws(ProtocolFailure) in try handOn(piece, of: kind, into: &events) }
        }
        inflated.removeAll(keepingCapacity: inflated.capacity <= 2 * Self.streamedPieceTarget)
        swap(&inflated, &payload)
        validatedCount = 0
        try handedOn.get()
    }

    /// Hands on validated payload of the streamed message; text up to its last whole code point.
    private mutating func handOn(
        _ bytes: UnsafeRawBufferPointer, of kind: Kind, into events: inout [InboundEvent]
    ) throws(ProtocolFailure) {
        guard !bytes.isEmpty, var message = partial else { return }
        message.streamedBytes += bytes.count
        if message.streamedBytes > maxMessageSize { throw .tooBig(limit: maxMessageSize) }
        partial = message
        guard kind == .text else {
            events.append(.message(.binary(Data(bytes))))
            return
        }
        var text = carry
        text.append(contentsOf: bytes)
        let end = Self.lastCodePointBoundary(in: text)
        carry = Array(text[end...])
        if end > 0 { events.append(.message(.text(String(decoding: text[..<end], as: UTF8.self)))) }
    }

    /// Where the last whole code point of `bytes` (a valid prefix of UTF-8) ends.
    package static func lastCodePointBoundary(in bytes: [UInt8]) -> Int {
        for back in 1...3 where back <= bytes.count {
            let byte = bytes[bytes.count - back]
            if byte & 0xC0 == 0x80 { continue }   // a continuation byte: look further back
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return length > back ? bytes.count - back : bytes.count
        }
        return bytes.count
    }
}
