import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

// MARK: - Helpers


/// Raw opcodes, so tests can also put reserved values on the wire.
private enum Op {
    static let continuation: UInt8 = 0x0
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA
}

/// RSV bits of a frame's first byte.
private let rsv1: UInt8 = 0x40
private let rsv2: UInt8 = 0x20
private let rsv3: UInt8 = 0x10

/// An unmasked frame as a server writes it, with the shortest length encoding.
private func frame(_ opcode: UInt8, fin: Bool = true, rsv: UInt8 = 0, _ payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
    switch payload.count {
    case ..<126:
        bytes.append(UInt8(payload.count))
    case ..<65536:
        bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    default:
        bytes.append(127)
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: payload.count >> (56 - 8 * $0)) }
    }
    return bytes + payload
}

private func utf8(_ string: String) -> [UInt8] { Array(string.utf8) }

/// A close frame payload: the code big-endian, then the reason bytes.
private func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
}

private func failure(_ code: WebSocketCloseCode, _ reason: String) -> InboundEvent {
    .failure(ProtocolFailure(code: code, reason: reason))
}

/// Feeds `chunks` in order to one assembler (each chunk in its own buffer, so nothing may
/// keep a view into an earlier one); every call must consume its whole chunk.
private func feed(
    _ chunks: [[UInt8]], maxMessageSize: Int = 1 << 20, inflater: MessageInflater? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) -> [InboundEvent] {
    var assembler = MessageAssembler(maxMessageSize: maxMessageSize, inflater: inflater)
    var events: [InboundEvent] = []
    for chunk in chunks {
        let consumed = chunk.withUnsafeBytes { assembler.read($0, into: &events) }
        #expect(consumed == chunk.count, sourceLocation: sourceLocation)
    }
    return events
}

private func feed(
    _ bytes: [UInt8], maxMessageSize: Int = 1 << 20, inflater: MessageInflater? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) -> [InboundEvent] {
    feed([bytes], maxMessageSize: maxMessageSize, inflater: inflater, sourceLocation: sourceLocation)
}

/// `bytes` cut at the ascending offsets `points`.
private func split(_ bytes: [UInt8], at points: [Int]) -> [[UInt8]] {
    var chunks: [[UInt8]] = []
    var start = 0
    for point in points + [bytes.count] {
        chunks.append(Array(bytes[start..<point]))
        start = point
    }
    return chunks
}

/// `bytes` cut into random chunks, mostly short, some empty.
private func randomChunks(_ bytes: [UInt8], using generator: inout SeededGenerator) -> [[UInt8]] {
    var chunks: [[UInt8]] = []
    var start = 0
    while start < bytes.count {
        let length = generator.below(min(bytes.count - start, generator.below(2) == 0 ? 3 : 40) + 1)
        chunks.append(Array(bytes[start..<start + length]))
        start += length
    }
    return chunks
}

// MARK: - RFC 6455 examples

@Suite("Frame codec: RFC 6455 section 5.7 examples, byte for byte")
struct FrameExampleTests {
    static let key = MaskingKey(0x37, 0xFA, 0x21, 0x3D)

    @Test("a single-frame unmasked text message \"Hello\"")
    func unmaskedText() {
        #expect(feed([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.message(.text("Hello"))])
    }

    @Test("the masked \"Hello\" is what the encoder writes, and a server may not send it")
    func maskedText() {
        let example: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(FrameEncoder.frame(opcode: .text, payload: utf8("Hello"), key: Self.key) == example)
        let masked = failure(.protocolError, "the server sent a masked frame")
        #expect(feed(example) == [masked])
        // The mask bit is in the second byte: that is all it takes.
        #expect(feed(Array(example.prefix(2))) == [masked])
    }

    @Test("a fragmented unmasked text message \"Hel\" + \"lo\"")
    func fragmentedText() {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        #expect(feed(bytes) == [.message(.text("Hello"))])
        // Nothing is reported until the final fragment ends.
        #expect(feed(Array(bytes.prefix(8))) == [])
    }

    @Test("an unmasked ping \"Hello\", and the masked pong answering it")
    func pingAndPong() {
        #expect(feed([0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.ping(utf8("Hello"))])
        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(FrameEncoder.frame(opcode: .pong, payload: utf8("Hello"), key: Self.key) == pong)
        #expect(feed([0x8A, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]) == [.pong(utf8("Hello"))])
        #expect(feed(pong) == [failure(.protocolError, "the server sent a masked frame")])
    }

    @Test("256 bytes of binary data: a 16-bit length")
    func binary256() {
        let payload = (0..<256).map { UInt8($0) }
        let bytes: [UInt8] = [0x82, 0x7E, 0x01, 0x00] + payload
        #expect(frame(Op.binary, payload) == bytes)
        #expect(feed(bytes) == [.message(.binary(Data(payload)))])
        let encoded = FrameEncoder.frame(opcode: .binary, payload: payload, key: Self.key)
        #expect(Array(encoded.prefix(8)) == [0x82, 0xFE, 0x01, 0x00, 0x37, 0xFA, 0x21, 0x3D])
        #expect(encoded.count == 8 + 256)
    }

    @Test("64 KiB of binary data: a 64-bit length")
    func binary64KiB() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes: [UInt8] = [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00] + payload
        #expect(frame(Op.binary, payload) == bytes)
        #expect(feed(bytes) == [.message(.binary(Data(payload)))])
        let encoded = FrameEncoder.frame(opcode: .binary, payload: payload, key: Self.key)
        #expect(Array(encoded.prefix(14)) == [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0, 0x37, 0xFA, 0x21, 0x3D])
        #expect(encoded.count == 14 + 65536)
    }

    @Test("the decoder hands out a header, then views into the caller's bytes")
    func decoderPieces() throws {
        let bytes: [UInt8] = [0x82, 0x7E, 0x01, 0x00] + [UInt8](repeating: 0xAB, count: 256) + [0x89, 0x00]
        var decoder = FrameDecoder()
        try bytes.withUnsafeBytes { all in
            var input = UnsafeRawBufferPointer(rebasing: all[..<100])
            guard case .header(let header) = try decoder.next(from: &input) else {
                Issue.record("expected a header")
                return
            }
            #expect(header == FrameHeader(isFinal: true, isCompressed: false, opcode: .binary, payloadLength: 256))
            guard case .payload(let first, let firstEnds) = try decoder.next(from: &input) else {
                Issue.record("expected payload")
                return
            }
            #expect(first.baseAddress == all.baseAddress! + 4 && first.count == 96 && !firstEnds)
            #expect(input.isEmpty)
            #expect(try decoder.next(from: &input) == nil)
            input = UnsafeRawBufferPointer(rebasing: all[100...])
            guard case .payload(let rest, let restEnds) = try decoder.next(from: &input) else {
                Issue.record("expected payload")
                return
            }
            #expect(rest.baseAddress == all.baseAddress! + 100 && rest.count == 160 && restEnds)
            guard case .header(let ping) = try decoder.next(from: &input) else {
                Issue.record("expected the ping's header")
                return
            }
            #expect(ping == FrameHeader(isFinal: true, isCompressed: false, opcode: .ping, payloadLength: 0))
            // An empty payload still ends the frame, even with no input left.
            #expect(input.isEmpty)
            guard case .payload(let empty, let emptyEnds) = try decoder.next(from: &input) else {
                Issue.record("expected an empty payload piece")
                return
            }
            #expect(empty.isEmpty && emptyEnds)
            #expect(try decoder.next(from: &input) == nil)
        }
    }
}

// MARK: - Splits

@Suite("MessageAssembler: the same events however the bytes are split")
struct AssemblerSplitTests {
    /// "é€𝄞" cut inside each code point: C3 | A9 E2 82 | AC F0 9D 84 9E.
    static let splitText: [UInt8] = utf8("é€𝄞")

    /// Messages, control frames between fragments, an empty message, a 16-bit length,
    /// a close, and bytes after the close (ignored).
    static let stream: [UInt8] =
        frame(Op.text, fin: false, utf8("Hel"))
        + frame(Op.ping, utf8("ping"))
        + frame(Op.continuation, utf8("lo"))
        + frame(Op.text, fin: false, Array(splitText[0..<1]))
        + frame(Op.pong, [])
        + frame(Op.continuation, fin: false, Array(splitText[1..<4]))
        + frame(Op.continuation, Array(splitText[4...]))
        + frame(Op.binary, [])
        + frame(Op.binary, (0..<130).map { UInt8($0) })
        + frame(Op.ping, [])
        + frame(Op.close, closePayload(1000, utf8("bye")))
        + frame(Op.text, utf8("after the close"))

    // Computed, not a static let: Data in a global looks leaked to LeakSanitizer.
    static var expected: [InboundEvent] { [
        .ping(utf8("ping")),
        .message(.text("Hello")),
        .pong([]),
        .message(.text("é€𝄞")),
        .message(.binary(Data())),
        .message(.binary(Data((0..<130).map { UInt8($0) }))),
        .ping([]),
        .close(CloseFrame(code: .normalClosure, reason: "bye")),
    ] }

    @Test("in one piece")
    func oneShot() {
        #expect(feed(Self.stream) == Self.expected)
    }

    @Test("split at every position")
    func everySplitPoint() {
        for point in 0...Self.stream.count {
            let events = feed(split(Self.stream, at: [point]))
            #expect(events == Self.expected, "split at \(point)")
        }
    }

    @Test("split at every pair of positions in the fragmented part")
    func everyPairOfSplitPoints() {
        let end = 40
        for first in 0...end {
            for second in first...end {
                let events = feed(split(Self.stream, at: [first, second]))
                #expect(events == Self.expected, "split at \(first) and \(second)")
            }
        }
    }

    @Test("one byte at a time")
    func byteByByte() {
        #expect(feed(Self.stream.map { [$0] }) == Self.expected)
    }

    @Test("in random chunks")
    func randomChunkings() {
        var generator = SeededGenerator(state: 6455)
        for round in 0..<300 {
            let chunks = randomChunks(Self.stream, using: &generator)
            #expect(feed(chunks) == Self.expected, "round \(round)")
        }
    }

    @Test("a failure mid-stream is the same wherever the input is split")
    func failureAtEverySplitPoint() {
        let bytes = frame(Op.text, fin: false, utf8("a")) + frame(Op.ping, utf8("p"))
            + frame(Op.continuation, [0x62, 0xC3, 0x28, 0x63]) + frame(Op.text, utf8("never"))
        let expected: [InboundEvent] = [.ping(utf8("p")), failure(.invalidFramePayloadData, "invalid UTF-8 in a text message")]
        for point in 0...bytes.count {
            #expect(feed(split(bytes, at: [point])) == expected, "split at \(point)")
        }
    }
}

// MARK: - Rules

@Suite("MessageAssembler: each broken rule fails with its code and reason")
struct AssemblerFailureTests {
    @Test("RSV2 or RSV3 set: 1002 on the first byte")
    func reservedBits() {
        let expected = [failure(.protocolError, "a frame has RSV2 or RSV3 set")]
        for rsv in [rsv2, rsv3, rsv2 | rsv3, rsv1 | rsv2] {
            #expect(feed([0x80 | rsv | Op.text]) == expected)
            #expect(feed(frame(Op.binary, rsv: rsv, utf8("x"))) == expected)
        }
    }

    @Test("reserved opcodes: 1002 on the first byte", arguments: Array(3...7) + Array(0xB...0xF))
    func reservedOpcode(opcode: UInt8) {
        let expected = [failure(.protocolError, "a frame has the reserved opcode \(opcode)")]
        #expect(feed([0x80 | opcode]) == expected)
        #expect(feed([opcode]) == expected)
        #expect(feed(frame(Op.text, utf8("ok")) + frame(opcode, [1, 2])) == [.message(.text("ok"))] + expected)
    }

    @Test("a masked frame: 1002 on the second byte")
    func maskedFrame() {
        let expected = [failure(.protocolError, "the server sent a masked frame")]
        #expect(feed([0x82, 0x80]) == expected)
        #expect(feed([0x89, 0x84, 1, 2, 3, 4, 5, 6, 7, 8]) == expected)
        #expect(feed([0x82]) == [])
    }

    @Test("a fragmented control frame: 1002 on the first byte")
    func fragmentedControl() {
        let expected = [failure(.protocolError, "a control frame is fragmented")]
        for opcode in [Op.close, Op.ping, Op.pong] {
            #expect(feed([opcode]) == expected)
            #expect(feed(frame(opcode, fin: false, [])) == expected)
        }
    }

    @Test("a control frame over 125 bytes: 1002 on the second byte; 125 is fine")
    func longControl() {
        let expected = [failure(.protocolError, "a control frame is longer than 125 bytes")]
        for opcode in [Op.close, Op.ping, Op.pong] {
            #expect(feed([0x80 | opcode, 126]) == expected)
            #expect(feed([0x80 | opcode, 127]) == expected)
            #expect(feed(frame(opcode, [UInt8](repeating: 0x61, count: 126))) == expected)
        }
        let longest = [UInt8](repeating: 0x61, count: 125)
        #expect(feed(frame(Op.ping, longest)) == [.ping(longest)])
        #expect(feed(frame(Op.pong, longest)) == [.pong(longest)])
        let reason = String(repeating: "r", count: 123)
        #expect(feed(frame(Op.close, closePayload(1000, utf8(reason)))) == [.close(CloseFrame(code: .normalClosure, reason: reason))])
    }

    @Test("a 64-bit length with its top bit set: 1002 once the length is complete")
    func lengthTopBit() {
        let header: [UInt8] = [0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0]
        #expect(feed(Array(header.prefix(9))) == [])
        #expect(feed(header) == [failure(.protocolError, "a frame length has its most significant bit set")])
        #expect(feed(split(header, at: [3, 7])) == [failure(.protocolError, "a frame length has its most significant bit set")])
        // Just below: a legal length, far over the limit.
        let largest: [UInt8] = [0x82, 0x7F, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(feed(largest, maxMessageSize: 1000) == [failure(.messageTooBig, "message larger than 1000 bytes")])
    }

    @Test("a continuation frame with no message to continue")
    func orphanContinuation() {
        let expected = [failure(.protocolError, "a continuation frame arrived with no message to continue")]
        #expect(feed(frame(Op.continuation, utf8("x"))) == expected)
        #expect(feed([0x80, 0x05]) == expected)
        // Also right after a message ended.
        #expect(feed(frame(Op.text, utf8("a")) + frame(Op.continuation, [])) == [.message(.text("a"))] + expected)
    }

    @Test("a new data frame before the message finished")
    func interleavedMessages() {
        let expected = [failure(.protocolError, "a new message began before the previous one finished")]
        #expect(feed(frame(Op.text, fin: false, utf8("a")) + frame(Op.text, utf8("b"))) == expected)
        #expect(feed(frame(Op.binary, fin: false, [1]) + frame(Op.ping, []) + [0x82, 0x00]) == [.ping([])] + expected)
        #expect(feed(frame(Op.text, fin: false, utf8("a")) + frame(Op.continuation, fin: false, utf8("b")) + [0x01]) == [])
        #expect(feed(frame(Op.text, fin: false, utf8("a")) + frame(Op.continuation, fin: false, utf8("b")) + [0x01, 0x00]) == expected)
    }

    @Test("RSV1 with no extension negotiated")
    func rsv1WithoutInflater() {
        let expected = [failure(.protocolError, "a frame has RSV1 set but no extension was negotiated")]
        #expect(feed([0x80 | rsv1 | Op.text, 0x00]) == expected)
        #expect(feed(frame(Op.binary, fin: false, rsv: rsv1, [0x00])) == expected)
    }

    @Test("RSV1 on a continuation frame, with or without an inflater")
    func rsv1OnContinuation() {
        let expected = [failure(.protocolError, "a continuation frame has RSV1 set")]
        #expect(feed(frame(Op.text, fin: false, utf8("a")) + frame(Op.continuation, rsv: rsv1, utf8("b"))) == expected)
        let inflater = MessageInflater(parameters: DeflateParameters())
        let bytes = frame(Op.text, fin: false, rsv: rsv1, [0xF2, 0x48, 0xCD]) + frame(Op.continuation, rsv: rsv1, [0xC9, 0xC9, 0x07, 0x00])
        #expect(feed(bytes, inflater: inflater) == expected)
    }

    @Test("RSV1 on a control frame, with or without an inflater")
    func rsv1OnControl() {
        let expected = [failure(.protocolError, "a control frame has RSV1 set")]
        for opcode in [Op.close, Op.ping, Op.pong] {
            #expect(feed(frame(opcode, rsv: rsv1, [])) == expected)
            #expect(feed(frame(opcode, rsv: rsv1, []), inflater: MessageInflater(parameters: DeflateParameters())) == expected)
        }
    }

    @Test("invalid UTF-8 fails on the bad byte, before the frame ends")
    func invalidUTF8MidFrame() {
        let expected = [failure(.invalidFramePayloadData, "invalid UTF-8 in a text message")]
        // A 10-byte text frame of which only "a", 0xFF arrived.
        var assembler = MessageAssembler(maxMessageSize: 1000)
        var events: [InboundEvent] = []
        let first: [UInt8] = [0x81, 0x0A, 0x61, 0xFF]
        #expect(first.withUnsafeBytes { assembler.read($0, into: &events) } == 4)
        #expect(events == expected)
        #expect(assembler.isFinished)
        let rest: [UInt8] = [0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61, 0x61] + frame(Op.text, utf8("later"))
        #expect(rest.withUnsafeBytes { assembler.read($0, into: &events) } == rest.count)
        #expect(events == expected)
        // In a later fragment too; and in one piece.
        #expect(feed([frame(Op.text, fin: false, utf8("ok")) + [0x80, 0x05, 0x62, 0xED, 0xA0]]) == expected)
        #expect(feed(frame(Op.text, [0x61, 0xC0, 0x80])) == expected)
        // Binary messages are not checked.
        #expect(feed(frame(Op.binary, [0xFF, 0xC0])) == [.message(.binary(Data([0xFF, 0xC0])))])
    }

    @Test("text that ends inside a code point, in one frame or several, in one piece or many")
    func truncatedUTF8() {
        let expected = [failure(.invalidFramePayloadData, "a text message ends inside a UTF-8 sequence")]
        let single = frame(Op.text, [0x61, 0xE2, 0x82])
        for point in 0...single.count {
            #expect(feed(split(single, at: [point])) == expected, "split at \(point)")
        }
        let fragmented = frame(Op.text, fin: false, [0x61, 0xF0, 0x9F]) + frame(Op.continuation, [0x98])
        for point in 0...fragmented.count {
            #expect(feed(split(fragmented, at: [point])) == expected, "split at \(point)")
        }
    }

    @Test("text split inside a code point across fragments is fine")
    func codePointAcrossFragments() {
        let bytes = utf8("€𝄞")
        for cut in 0...bytes.count {
            let stream = frame(Op.text, fin: false, Array(bytes[..<cut])) + frame(Op.ping, [7]) + frame(Op.continuation, Array(bytes[cut...]))
            #expect(feed(stream) == [.ping([7]), .message(.text("€𝄞"))], "cut at \(cut)")
        }
    }

    @Test("a close payload of one byte")
    func oneByteClose() {
        #expect(feed(frame(Op.close, [0x03])) == [failure(.protocolError, "a close frame has a 1-byte payload")])
    }

    @Test("close codes no peer may send: 1002",
          arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] as [UInt16])
    func invalidCloseCode(code: UInt16) {
        #expect(feed(frame(Op.close, closePayload(code, utf8("x"))))
                == [failure(.protocolError, "the peer sent the invalid close code \(code)")])
        #expect(feed(frame(Op.close, closePayload(code))) == [failure(.protocolError, "the peer sent the invalid close code \(code)")])
    }

    @Test("close codes a peer may send are reported with their reason",
          arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999] as [UInt16])
    func validCloseCode(code: UInt16) {
        #expect(feed(frame(Op.close, closePayload(code, utf8("why ✓"))))
                == [.close(CloseFrame(code: WebSocketCloseCode(rawValue: code), reason: "why ✓"))])
        #expect(feed(frame(Op.close, closePayload(code))) == [.close(CloseFrame(code: WebSocketCloseCode(rawValue: code), reason: ""))])
    }

    @Test("an empty close frame has no code")
    func emptyClose() {
        #expect(feed(frame(Op.close, [])) == [.close(CloseFrame(code: nil, reason: ""))])
    }

    @Test("a close reason that is not UTF-8: 1007")
    func invalidCloseReason() {
        let expected = [failure(.invalidFramePayloadData, "the close reason is not valid UTF-8")]
        #expect(feed(frame(Op.close, closePayload(1000, [0xC3, 0x28]))) == expected)
        #expect(feed(frame(Op.close, closePayload(1000, [0x61, 0xE2, 0x82]))) == expected)
    }

    @Test("1009 at the header that announces too long a message, before its payload")
    func tooBigAtHeader() {
        let expected = [failure(.messageTooBig, "message larger than 100 bytes")]
        #expect(feed([0x82, 101], maxMessageSize: 100) == expected)
        #expect(feed([0x81, 0x7E, 0x01, 0x00], maxMessageSize: 100) == expected)
        #expect(feed([0x82, 0x7F, 0, 0, 0, 1, 0, 0, 0, 0], maxMessageSize: 100) == expected)
        // Exactly the limit is fine.
        let largest = [UInt8](repeating: 0x61, count: 100)
        #expect(feed(frame(Op.text, largest), maxMessageSize: 100) == [.message(.text(String(repeating: "a", count: 100)))])
        #expect(feed(frame(Op.binary, largest), maxMessageSize: 100) == [.message(.binary(Data(largest)))])
    }

    @Test("1009 when the fragments add up to too much, at the header of the one that passes the limit")
    func tooBigFragments() {
        let expected = [failure(.messageTooBig, "message larger than 100 bytes")]
        let sixty = [UInt8](repeating: 0x62, count: 60)
        let start = frame(Op.binary, fin: false, sixty) + frame(Op.ping, [])
        #expect(feed(start + [0x80, 41], maxMessageSize: 100) == [.ping([])] + expected)
        #expect(feed(start + [0x00, 30] + [UInt8](repeating: 0, count: 30) + [0x80, 11], maxMessageSize: 100) == [.ping([])] + expected)
        // Exactly the limit is fine.
        let fits = start + frame(Op.continuation, [UInt8](repeating: 0x63, count: 40))
        #expect(feed(fits, maxMessageSize: 100) == [.ping([]), .message(.binary(Data(sixty + [UInt8](repeating: 0x63, count: 40))))])
    }

    @Test("a message in more fragments than allowed: 1009 at the header of the one too many")
    func fragmentLimit() {
        let limit = 4
        func message(fragments: Int) -> [UInt8] {
            var bytes = frame(Op.binary, fin: fragments == 1, [0x61])
            for index in 1..<max(fragments, 1) {
                bytes += frame(Op.continuation, fin: index == fragments - 1, [0x61])
            }
            return bytes
        }
        func read(_ bytes: [UInt8]) -> [InboundEvent] {
            var assembler = MessageAssembler(maxMessageSize: 100, maxFragments: limit)
            var events: [InboundEvent] = []
            bytes.withUnsafeBytes { _ = assembler.read($0, into: &events) }
            return events
        }
        #expect(read(message(fragments: limit)) == [.message(.binary(Data(repeating: 0x61, count: limit)))])
        // Control frames between fragments do not count.
        let withPing = frame(Op.binary, fin: false, [0x61]) + frame(Op.ping, []) + frame(Op.continuation, fin: false, [0x61])
            + frame(Op.continuation, fin: false, [0x61]) + frame(Op.continuation, [0x61])
        #expect(read(withPing) == [.ping([]), .message(.binary(Data(repeating: 0x61, count: 4)))])
        var tooMany = ProtocolFailure(code: .messageTooBig, reason: "message in more than 4 fragments (maxFragmentsPerMessage)")
        tooMany.exceedsFragmentLimit = true
        // The fifth header fails, before its payload; the next message would have been fine.
        #expect(read(message(fragments: limit + 1) + message(fragments: 1)) == [.failure(tooMany)])
        // Each message counts afresh.
        #expect(read(message(fragments: limit) + message(fragments: limit)).count == 2)
    }

    @Test("after a failure or a close, further input is ignored")
    func finished() {
        var assembler = MessageAssembler(maxMessageSize: 100)
        var events: [InboundEvent] = []
        let bad: [UInt8] = [0x83, 0x00]
        bad.withUnsafeBytes { _ = assembler.read($0, into: &events) }
        #expect(assembler.isFinished)
        let good = frame(Op.text, utf8("ignored")) + frame(Op.close, [])
        #expect(good.withUnsafeBytes { assembler.read($0, into: &events) } == good.count)
        #expect(events == [failure(.protocolError, "a frame has the reserved opcode 3")])

        var closed = MessageAssembler(maxMessageSize: 100)
        var closeEvents: [InboundEvent] = []
        let close = frame(Op.close, closePayload(1001)) + frame(Op.text, utf8("same chunk"))
        #expect(close.withUnsafeBytes { closed.read($0, into: &closeEvents, stopAfterMessage: true) } == close.count)
        #expect(closed.isFinished)
        let later = frame(Op.text, utf8("later chunk")) + [0x83]
        #expect(later.withUnsafeBytes { closed.read($0, into: &closeEvents) } == later.count)
        #expect(closeEvents == [.close(CloseFrame(code: .goingAway, reason: ""))])
    }
}

// MARK: - stopAfterMessage

@Suite("MessageAssembler: stopping after each message")
struct AssemblerStopAfterMessageTests {
    static let stream: [UInt8] =
        frame(Op.text, utf8("one"))                                            // 0..<5
        + frame(Op.ping, utf8("p")) + frame(Op.binary, [1, 2, 3])              // 5..<13
        + frame(Op.text, fin: false, utf8("tw")) + frame(Op.continuation, utf8("o")) // 13..<20
        + frame(Op.binary, [])                                                 // 20..<22
        + frame(Op.close, closePayload(1000)) + frame(Op.text, utf8("ignored"))

    @Test("returns right after each whole message with the bytes it consumed")
    func exactCounts() {
        var assembler = MessageAssembler(maxMessageSize: 100)
        var events: [InboundEvent] = []
        var offset = 0
        func step() -> Int {
            let consumed = Self.stream[offset...].withUnsafeBytes { assembler.read($0, into: &events, stopAfterMessage: true) }
            offset += consumed
            return consumed
        }
        #expect(step() == 5)
        #expect(events == [.message(.text("one"))])
        #expect(step() == 8)
        #expect(events.suffix(2) == [.ping(utf8("p")), .message(.binary(Data([1, 2, 3])))])
        #expect(step() == 7)
        #expect(events.last == .message(.text("two")))
        #expect(step() == 2)
        #expect(events.last == .message(.binary(Data())))
        // The close ends it: the rest is consumed and ignored.
        #expect(step() == Self.stream.count - 22)
        #expect(events.last == .close(CloseFrame(code: .normalClosure, reason: "")))
        #expect(events.count == 6)
        #expect(offset == Self.stream.count)
    }

    @Test("a chunk without a whole message is consumed whole")
    func noMessage() {
        var assembler = MessageAssembler(maxMessageSize: 100)
        var events: [InboundEvent] = []
        // The first fragment of "two" and the next one's header: no message yet.
        let partial = Array(Self.stream[13..<19])
        #expect(partial.withUnsafeBytes { assembler.read($0, into: &events, stopAfterMessage: true) } == 6)
        #expect(events == [])
        let last = Array(Self.stream[19..<20])
        #expect(last.withUnsafeBytes { assembler.read($0, into: &events, stopAfterMessage: true) } == 1)
        #expect(events == [.message(.text("two"))])
    }

    @Test("read the way the transport reads (stop, then go on with the rest), at every split")
    func transportLoop() {
        let expected = feed(Self.stream, maxMessageSize: 100)
        for point in 0...Self.stream.count {
            var assembler = MessageAssembler(maxMessageSize: 100)
            var events: [InboundEvent] = []
            for chunk in split(Self.stream, at: [point]) {
                var rest = chunk[...]
                while !rest.isEmpty {
                    let before = events.count
                    let consumed = rest.withUnsafeBytes { assembler.read($0, into: &events, stopAfterMessage: true) }
                    #expect(consumed > 0)
                    let messages = events[before...].filter { if case .message = $0 { true } else { false } }
                    #expect(messages.count <= 1)
                    rest = rest.dropFirst(consumed)
                }
            }
            #expect(events == expected, "split at \(point)")
        }
    }
}

// MARK: - permessage-deflate

@Suite("MessageAssembler: permessage-deflate messages")
struct AssemblerCompressionTests {
    static func inflater() -> MessageInflater { MessageInflater(parameters: DeflateParameters()) }

    static func compress(_ bytes: [UInt8], with deflater: MessageDeflater) -> [UInt8] {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { deflater.compress($0, into: &output) }
        return output
    }

    /// `payload` as a compressed message in frames of at most `fragmentSize` bytes
    /// (RSV1 on the first only), with a ping after the first frame if more follow.
    static func compressedFrames(_ opcode: UInt8, _ payload: [UInt8], fragmentSize: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var start = 0
        repeat {
            let end = min(payload.count, start + fragmentSize)
            bytes += frame(start == 0 ? opcode : Op.continuation, fin: end == payload.count, rsv: start == 0 ? rsv1 : 0,
                           Array(payload[start..<end]))
            if start == 0, end < payload.count { bytes += frame(Op.ping, utf8("between")) }
            start = end
        } while start < payload.count
        return bytes
    }

    @Test("RFC 7692 7.2.3.1-7.2.3.3: \"Hello\" compressed, fragmented, referring back, stored")
    func rfcExamples() {
        let stream: [UInt8] = [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
            + [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
            + [0xC1, 0x05, 0xF2, 0x00, 0x11, 0x00, 0x00]
            + [0xC1, 0x0B, 0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00]
        let expected = [InboundEvent](repeating: .message(.text("Hello")), count: 4)
        for point in 0...stream.count {
            #expect(feed(split(stream, at: [point]), inflater: Self.inflater()) == expected, "split at \(point)")
        }
    }

    @Test("deflater output decodes, whole or in fragments, at every split, with context takeover")
    func deflaterRoundTrip() throws {
        let text = String(repeating: "Grüße, €uro 𝄞 — compressed text. ", count: 40)
        let binary = (0..<3000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let first = Self.compress(utf8(text), with: deflater)
        let second = Self.compress(binary, with: deflater)
        let third = Self.compress(utf8(text), with: deflater)
        #expect(third.count < first.count)  // it refers back to the first
        #expect(first.count > 50 && second.count > 7 && third.count > 3)
        let stream = Self.compressedFrames(Op.text, first, fragmentSize: 50)
            + frame(Op.text, utf8("plain"))
            + Self.compressedFrames(Op.binary, second, fragmentSize: 7)
            + Self.compressedFrames(Op.text, third, fragmentSize: 3)
        let expected: [InboundEvent] = [
            .ping(utf8("between")), .message(.text(text)),
            .message(.text("plain")),
            .ping(utf8("between")), .message(.binary(Data(binary))),
            .ping(utf8("between")), .message(.text(text)),
        ]
        #expect(feed(stream, inflater: Self.inflater()) == expected)
        for point in stride(from: 0, through: stream.count, by: 3) {
            #expect(feed(split(stream, at: [point]), inflater: Self.inflater()) == expected, "split at \(point)")
        }
        var generator = SeededGenerator(state: 7692)
        for round in 0..<50 {
            #expect(feed(randomChunks(stream, using: &generator), inflater: Self.inflater()) == expected, "round \(round)")
        }
    }

    @Test("compressed text that is not UTF-8: 1007; ending inside a code point: 1007")
    func compressedInvalidText() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let bad = Self.compress([UInt8](repeating: 0x61, count: 100) + [0xFF] + [UInt8](repeating: 0x62, count: 100), with: deflater)
        #expect(feed(frame(Op.text, rsv: rsv1, bad), inflater: Self.inflater())
                == [failure(.invalidFramePayloadData, "invalid UTF-8 in a text message")])
        let truncated = Self.compress(utf8("abc") + [0xE2, 0x82], with: try MessageDeflater(parameters: DeflateParameters()))
        #expect(feed(frame(Op.text, rsv: rsv1, truncated), inflater: Self.inflater())
                == [failure(.invalidFramePayloadData, "a text message ends inside a UTF-8 sequence")])
        // The same bytes as binary are fine.
        #expect(feed(frame(Op.binary, rsv: rsv1, truncated), inflater: Self.inflater())
                == [.message(.binary(Data(utf8("abc") + [0xE2, 0x82])))])
    }

    @Test("inflated text is checked before a later failure: the first broken rule wins at every split")
    func firstFailureWins() throws {
        let invalid = failure(.invalidFramePayloadData, "invalid UTF-8 in a text message")
        // Invalid UTF-8 early in a message that then passes the limit.
        let long = Self.compress([0x61, 0xFF] + [UInt8](repeating: 0x61, count: 5000), with: try MessageDeflater(parameters: DeflateParameters()))
        // Invalid UTF-8, then a block of the reserved type 3.
        let corrupt = Self.compress([0x61, 0xFF, 0x62], with: try MessageDeflater(parameters: DeflateParameters())) + [0xFF, 0xFF]
        for payload in [long, corrupt] {
            let bytes = frame(Op.text, rsv: rsv1, payload)
            for point in 0...bytes.count {
                #expect(feed(split(bytes, at: [point]), maxMessageSize: 100, inflater: Self.inflater()) == [invalid], "split at \(point)")
            }
        }
        // As binary, the other failures show.
        #expect(feed(frame(Op.binary, rsv: rsv1, long), maxMessageSize: 100, inflater: Self.inflater())
                == [failure(.messageTooBig, "message larger than 100 bytes")])
        let events = feed(frame(Op.binary, rsv: rsv1, corrupt), maxMessageSize: 100, inflater: Self.inflater())
        guard case .failure(let corruption) = events.first, events.count == 1 else {
            Issue.record("expected one failure, got \(events)")
            return
        }
        #expect(corruption.code == .invalidFramePayloadData)
        #expect(corruption.reason.hasPrefix("a compressed message could not be inflated: "))
    }

    @Test("a deflate bomb: 1009 under a small limit; exactly the limit is fine")
    func deflateBomb() throws {
        let zeros = [UInt8](repeating: 0, count: 4 << 20)
        let bomb = Self.compress(zeros, with: try MessageDeflater(parameters: DeflateParameters()))
        #expect(bomb.count < 8192)
        #expect(feed(frame(Op.binary, rsv: rsv1, bomb), maxMessageSize: 65536, inflater: Self.inflater())
                == [failure(.messageTooBig, "message larger than 65536 bytes")])
        // In 4-byte fragments: the first cannot pass the limit, a later one does.
        #expect(feed(Self.compressedFrames(Op.binary, bomb, fragmentSize: 4), maxMessageSize: 65536, inflater: Self.inflater())
                == [.ping(utf8("between")), failure(.messageTooBig, "message larger than 65536 bytes")])

        let thousand = Self.compress([UInt8](repeating: 0x7A, count: 1000), with: try MessageDeflater(parameters: DeflateParameters()))
        #expect(feed(frame(Op.text, rsv: rsv1, thousand), maxMessageSize: 1000, inflater: Self.inflater())
                == [.message(.text(String(repeating: "z", count: 1000)))])
        #expect(feed(frame(Op.text, rsv: rsv1, thousand), maxMessageSize: 999, inflater: Self.inflater())
                == [failure(.messageTooBig, "message larger than 999 bytes")])
    }

    @Test("data that does not inflate: 1007")
    func corrupt() {
        let events = feed(frame(Op.binary, rsv: rsv1, [0xFF, 0xFF, 0xFF, 0xFF]), inflater: Self.inflater())
        #expect(events.count == 1)
        guard case .failure(let failure) = events.first else {
            Issue.record("expected a failure, got \(events)")
            return
        }
        #expect(failure.code == .invalidFramePayloadData)
        #expect(failure.reason.hasPrefix("a compressed message could not be inflated: "))
    }
}

// MARK: - Masking

@Suite("MaskingKey and MaskingKeySource")
struct MaskingKeyTests {
    static let keyBytes: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    static let key = MaskingKey(0x37, 0xFA, 0x21, 0x3D)

    @Test("the key's bits hold its bytes in wire order; patterns start at the phase")
    func layout() {
        #expect(withUnsafeBytes(of: Self.key.bits) { Array($0) } == Self.keyBytes)
        for phase in 0...3 {
            let expected = (0..<8).map { Self.keyBytes[(phase + $0) % 4] }
            #expect(withUnsafeBytes(of: Self.key.pattern(phase: phase)) { Array($0) } == expected)
        }
    }

    @Test("copyMasked equals a byte-by-byte XOR: lengths 0-200 (every mix of 64-, 16-, 8- and 1-byte steps), every phase, unaligned, nothing written outside")
    func matchesNaiveXOR() {
        var generator = SeededGenerator(state: 5)
        let source = (0..<216).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for length in 0...200 {
            for offset in [0, 1, 2, 3, 5, 1_000_003] {
                for sourceStart in 0..<4 {
                    for destinationStart in [0, 1, 3, 7] {
                        var destination = [UInt8](repeating: 0xEE, count: 216)
                        source.withUnsafeBytes { from in
                            destination.withUnsafeMutableBytes { to in
                                Self.key.copyMasked(UnsafeRawBufferPointer(rebasing: from[sourceStart..<sourceStart + length]),
                                                    to: to.baseAddress! + destinationStart, offset: offset)
                            }
                        }
                        var expected = [UInt8](repeating: 0xEE, count: 216)
                        for index in 0..<length {
                            expected[destinationStart + index] = source[sourceStart + index] ^ Self.keyBytes[(offset + index) % 4]
                        }
                        if destination != expected {
                            Issue.record("length \(length), offset \(offset), from +\(sourceStart), to +\(destinationStart)")
                        }
                    }
                }
            }
        }
    }

    @Test("masking in pieces with their offsets equals masking in one go; masking twice restores")
    func piecesAndInverse() {
        let input = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var whole = [UInt8](repeating: 0, count: input.count)
        input.withUnsafeBytes { from in whole.withUnsafeMutableBytes { Self.key.copyMasked(from, to: $0.baseAddress!) } }
        #expect(whole != input)
        var pieces = [UInt8](repeating: 0, count: input.count)
        let cuts = [0, 1, 4, 7, 19, 64, 65, 200, 300]
        for (start, end) in zip(cuts, cuts.dropFirst()) {
            input.withUnsafeBytes { from in
                pieces.withUnsafeMutableBytes { to in
                    Self.key.copyMasked(UnsafeRawBufferPointer(rebasing: from[start..<end]), to: to.baseAddress! + start, offset: start)
                }
            }
        }
        #expect(pieces == whole)
        var restored = [UInt8](repeating: 0, count: input.count)
        whole.withUnsafeBytes { from in restored.withUnsafeMutableBytes { Self.key.copyMasked(from, to: $0.baseAddress!) } }
        #expect(restored == input)
        // In place works too.
        whole.withUnsafeMutableBytes { Self.key.copyMasked(UnsafeRawBufferPointer($0), to: $0.baseAddress!) }
        #expect(whole == input)
    }

    @Test("MaskingKeySource yields distinct keys across batches")
    func distinctKeys() {
        var small = MaskingKeySource(batchSize: 3)
        let keys = (0..<200).map { _ in small.next() }
        #expect(Set(keys).count == keys.count)
        var source = MaskingKeySource()
        let many = (0..<1100).map { _ in source.next().bits }
        // 1100 random 32-bit keys: a collision or two is possible, a stuck generator is not.
        #expect(Set(many).count >= 1095)
    }
}

// MARK: - Encoder and close payloads

/// Undoes a client frame: clears the mask bit, drops the key and unmasks the payload,
/// giving the frame a server would send with the same header.
private func unmaskedClientFrame(_ bytes: [UInt8]) -> [UInt8] {
    let shortLength = bytes[1] & 0x7F
    let keyStart = shortLength == 127 ? 10 : shortLength == 126 ? 4 : 2
    #expect(bytes[1] & 0x80 != 0)
    let key = MaskingKey(bytes[keyStart], bytes[keyStart + 1], bytes[keyStart + 2], bytes[keyStart + 3])
    var output = [bytes[0], shortLength] + bytes[2..<keyStart]
    let payload = Array(bytes[(keyStart + 4)...])
    var unmasked = [UInt8](repeating: 0, count: payload.count)
    payload.withUnsafeBytes { from in unmasked.withUnsafeMutableBytes { key.copyMasked(from, to: $0.baseAddress!) } }
    output += unmasked
    return output
}

@Suite("FrameEncoder and CloseFrame payloads")
struct FrameEncoderTests {
    static let key = MaskingKey(1, 2, 3, 4)

    @Test("header lengths at the 125/126 and 65535/65536 boundaries")
    func headerLengths() {
        #expect(FrameEncoder.headerLength(payloadLength: 0) == 6)
        #expect(FrameEncoder.headerLength(payloadLength: 125) == 6)
        #expect(FrameEncoder.headerLength(payloadLength: 126) == 8)
        #expect(FrameEncoder.headerLength(payloadLength: 65535) == 8)
        #expect(FrameEncoder.headerLength(payloadLength: 65536) == 14)
        #expect(FrameEncoder.headerLength(payloadLength: 1 << 40) == 14)
        #expect(FrameEncoder.maxHeaderLength == 14)
    }

    @Test("header bytes at each boundary", arguments: [
        (125, [0x82, 0xFD] as [UInt8]),
        (126, [0x82, 0xFE, 0x00, 0x7E]),
        (65535, [0x82, 0xFE, 0xFF, 0xFF]),
        (65536, [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0]),
        (0x1_0203_0405, [0x82, 0xFF, 0, 0, 0, 1, 2, 3, 4, 5]),
    ])
    func headerBytes(length: Int, expected: [UInt8]) {
        var header = [UInt8](repeating: 0xEE, count: 16)
        let written = header.withUnsafeMutableBytes {
            FrameEncoder.writeHeader(into: $0.baseAddress!, opcode: .binary, isFinal: true, payloadLength: length, key: Self.key)
        }
        #expect(written == FrameEncoder.headerLength(payloadLength: length))
        #expect(Array(header.prefix(written)) == expected + [1, 2, 3, 4])
        #expect(header[written...].allSatisfy { $0 == 0xEE })
    }

    @Test("FIN, RSV1 and the opcode in the first byte; unaligned destination")
    func firstByte() {
        var buffer = [UInt8](repeating: 0, count: 32)
        let cases: [(FrameOpcode, Bool, Bool, UInt8)] = [
            (.text, false, true, 0x41), (.continuation, true, false, 0x80), (.continuation, false, false, 0x00),
            (.binary, true, true, 0xC2), (.close, true, false, 0x88), (.ping, true, false, 0x89), (.pong, true, false, 0x8A),
        ]
        for (opcode, isFinal, isCompressed, expected) in cases {
            buffer.withUnsafeMutableBytes {
                _ = FrameEncoder.writeHeader(into: $0.baseAddress! + 3, opcode: opcode, isFinal: isFinal,
                                             isCompressed: isCompressed, payloadLength: 300, key: Self.key)
            }
            #expect(Array(buffer[3..<11]) == [expected, 0xFE, 0x01, 0x2C, 1, 2, 3, 4])
        }
    }

    @Test("a whole frame, unmasked, is the server's frame with the same payload", arguments: [0, 1, 125, 126, 127, 65535, 65536])
    func wholeFrames(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 8)) }
        let encoded = FrameEncoder.frame(opcode: .binary, payload: payload, key: MaskingKey(0x9A, 0, 0xFF, 0x13))
        #expect(encoded.count == FrameEncoder.headerLength(payloadLength: length) + length)
        #expect(unmaskedClientFrame(encoded) == frame(Op.binary, payload))
        #expect(feed(unmaskedClientFrame(encoded)) == [.message(.binary(Data(payload)))])
    }

    @Test("close payloads: the code big-endian, the reason cut to 123 bytes at a character boundary")
    func closePayloads() throws {
        #expect(CloseFrame(code: nil, reason: "ignored").payload == [])
        #expect(CloseFrame(code: .normalClosure).payload == [0x03, 0xE8])
        #expect(CloseFrame(code: 4321, reason: "bye").payload == [0x10, 0xE1, 0x62, 0x79, 0x65])
        let cases: [(reason: String, keptBytes: Int)] = [
            (String(repeating: "a", count: 123), 123),
            (String(repeating: "a", count: 200), 123),
            (String(repeating: "é", count: 200), 122),           // 2-byte characters: 61 fit
            ("a" + String(repeating: "é", count: 200), 123),
            (String(repeating: "€", count: 50), 123),            // 3-byte characters: 41 fit exactly
            ("ab" + String(repeating: "€", count: 50), 122),
            (String(repeating: "😀", count: 40), 120),           // 4-byte characters: 30 fit
            (String(repeating: "👍🏽", count: 20), 120),          // 8-byte characters: 15 fit
        ]
        for (reason, keptBytes) in cases {
            let payload = CloseFrame(code: .goingAway, reason: reason).payload
            #expect(payload.count == 2 + keptBytes, "\(reason.prefix(3))")
            #expect(Array(payload.prefix(2)) == [0x03, 0xE9])
            let kept = String(decoding: payload[2...], as: UTF8.self)
            #expect(reason.hasPrefix(kept))
            #expect(utf8(kept) == Array(payload[2...]))
            let parsed = try payload.withUnsafeBytes { try CloseFrame(parsing: $0) }
            #expect(parsed == CloseFrame(code: .goingAway, reason: kept))
        }
        // A single character longer than 123 bytes cannot be cut: no reason at all.
        let huge = CloseFrame(code: .goingAway, reason: "e" + String(repeating: "\u{301}", count: 100)).payload
        #expect(huge == [0x03, 0xE9])
    }

    @Test("which close codes a peer may send")
    func mayBeReceived() {
        let valid = (0...UInt16.max).filter(CloseFrame.mayBeReceived)
        #expect(valid == Array(1000...1003) + Array(1007...1014) + Array(3000...4999))
    }
}

// MARK: - Fuzzing

@Suite("MessageAssembler: seeded fuzzing")
struct AssemblerFuzzTests {
    /// Characters of 1 to 4 bytes, as UTF-8.
    static let alphabet: [[UInt8]] = ["a", "é", "€", "𝄞", " ", "z"].map { utf8($0) }
    static let closeCodes: [UInt16] = [1000, 1001, 1005, 1007, 999, 3000, 4999, 5000]

    /// Random text of up to `maxCharacters` characters, as UTF-8.
    fileprivate static func randomText(maxCharacters: Int, using generator: inout SeededGenerator) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<generator.below(maxCharacters + 1) { bytes += alphabet[generator.below(alphabet.count)] }
        return bytes
    }

    fileprivate static func randomBytes(_ count: Int, using generator: inout SeededGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// Random frames: messages (whole or fragmented, compressed when `deflater` is given),
    /// control frames (some between fragments), close frames and stray bytes.
    fileprivate static func randomStream(using generator: inout SeededGenerator, deflater: MessageDeflater?) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0...generator.below(5) {
            switch generator.below(10) {
            case 0, 1:
                bytes += fragments(Op.text, randomText(maxCharacters: 12, using: &generator), using: &generator)
            case 2, 3:
                let count = generator.below(2) == 0 ? generator.below(21) : 120 + generator.below(21)
                bytes += fragments(Op.binary, randomBytes(count, using: &generator), using: &generator)
            case 4:
                bytes += frame(generator.below(2) == 0 ? Op.ping : Op.pong, randomBytes(generator.below(10), using: &generator))
            case 5:
                if generator.below(4) == 0 {
                    let code = closeCodes[generator.below(closeCodes.count)]
                    bytes += frame(Op.close, closePayload(code, generator.below(2) == 0 ? utf8("bye é") : [0x62, 0xFF]))
                }
            case 6, 7:
                if let deflater {
                    let isText = generator.below(2) == 0
                    var plain = randomText(maxCharacters: 30, using: &generator)
                    if !isText || generator.below(8) == 0 { plain.append(0xFF) }
                    var compressed: [UInt8] = []
                    plain.withUnsafeBytes { deflater.compress($0, into: &compressed) }
                    bytes += fragments(isText ? Op.text : Op.binary, compressed, compressed: true, using: &generator)
                }
            case 8:
                bytes += randomBytes(1 + generator.below(4), using: &generator)
            default:
                bytes += frame(Op.text, utf8("plain"))
            }
        }
        return bytes
    }

    /// `payload` in one to three frames, a ping sometimes between them.
    fileprivate static func fragments(
        _ opcode: UInt8, _ payload: [UInt8], compressed: Bool = false, using generator: inout SeededGenerator
    ) -> [UInt8] {
        var cuts = (0..<generator.below(3)).map { _ in generator.below(payload.count + 1) }.sorted()
        cuts.append(payload.count)
        var bytes: [UInt8] = []
        var start = 0
        for (index, end) in cuts.enumerated() {
            bytes += frame(index == 0 ? opcode : Op.continuation, fin: index == cuts.count - 1,
                           rsv: compressed && index == 0 ? rsv1 : 0, Array(payload[start..<end]))
            if index < cuts.count - 1, generator.below(2) == 0 { bytes += frame(Op.ping, [UInt8(index)]) }
            start = end
        }
        return bytes
    }

    /// One to three random edits: a flipped bit, a replaced, deleted or inserted byte, a cut.
    fileprivate static func mutate(_ bytes: inout [UInt8], using generator: inout SeededGenerator) {
        for _ in 0...generator.below(3) where !bytes.isEmpty {
            let index = generator.below(bytes.count)
            switch generator.below(5) {
            case 0: bytes[index] ^= 1 << UInt8(generator.below(8))
            case 1: bytes[index] = UInt8(truncatingIfNeeded: generator.next())
            case 2: bytes.remove(at: index)
            case 3: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: index)
            default: bytes.removeLast(bytes.count - index)
            }
        }
    }

    /// Feeds `chunks`, the way the transport does when `stopAfterMessage`: going on with the rest.
    static func run(_ chunks: [[UInt8]], limit: Int, inflater: MessageInflater?, stopAfterMessage: Bool) -> [InboundEvent]? {
        var assembler = MessageAssembler(maxMessageSize: limit, inflater: inflater)
        var events: [InboundEvent] = []
        for chunk in chunks {
            var rest = chunk[...]
            while !rest.isEmpty {
                let consumed = rest.withUnsafeBytes { assembler.read($0, into: &events, stopAfterMessage: stopAfterMessage) }
                guard consumed > 0, consumed <= rest.count, stopAfterMessage || consumed == rest.count else { return nil }
                rest = rest.dropFirst(consumed)
            }
        }
        return events
    }

    @Test("random and mutated streams: no crash, the same events in one piece or in chunks")
    func fuzz() throws {
        var generator = SeededGenerator(state: 0x6455_7692)
        var parameters = DeflateParameters()
        parameters.clientNoContextTakeover = true
        parameters.serverNoContextTakeover = true
        let deflater = try MessageDeflater(parameters: parameters)
        var failures = 0
        var messages = 0
        for round in 0..<20_000 {
            let compressed = round % 8 == 0
            var bytes = Self.randomStream(using: &generator, deflater: compressed ? deflater : nil)
            if generator.below(2) == 0 { Self.mutate(&bytes, using: &generator) }
            let limit = [8, 64, 1 << 20][generator.below(3)]
            let chunks = randomChunks(bytes, using: &generator)
            let stop = generator.below(2) == 0
            let oneShot = Self.run([bytes], limit: limit, inflater: compressed ? MessageInflater(parameters: parameters) : nil, stopAfterMessage: false)
            let chunked = Self.run(chunks, limit: limit, inflater: compressed ? MessageInflater(parameters: parameters) : nil, stopAfterMessage: stop)
            guard let oneShot, oneShot == chunked else {
                Issue.record("round \(round): \(bytes) in \(chunks.map(\.count)): \(oneShot as Any) vs \(chunked as Any)")
                return
            }
            // A failure or a close ends the events.
            for event in oneShot.dropLast() {
                switch event {
                case .failure, .close:
                    Issue.record("round \(round): an event after \(event)")
                    return
                default: break
                }
            }
            if case .failure = oneShot.last { failures += 1 }
            messages += oneShot.count { if case .message = $0 { true } else { false } }
        }
        // The generator reaches both outcomes often.
        #expect(failures > 3000)
        #expect(messages > 10_000)
    }
}
