import Testing
@testable import WebSocketTestServer

/// What a dropped connection held unread, decoded byte for byte: the whole client messages,
/// the one a drop cut, and the rest of a frame libwebsockets had begun to parse.
@Suite("DiscardedInput: the client's messages in a dropped socket's unread bytes")
struct DiscardedInputTests {
    /// A client frame: FIN and RSV1 as given, masked with `key`.
    private static func frame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, compressed: Bool = false,
        key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (compressed ? 0x40 : 0) | opcode]
        if payload.count < 126 {
            bytes.append(0x80 | UInt8(payload.count))
        } else {
            bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        bytes += key
        bytes += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        return bytes
    }

    private static func text(_ string: String, fin: Bool = true) -> [UInt8] { frame(0x1, Array(string.utf8), fin: fin) }

    private static func payloads(_ input: DiscardedInput) -> [String?] {
        input.messages.map { $0.payload.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test("whole messages are decoded in order, control frames between them skipped")
    func wholeMessages() {
        let bytes = Self.text("s1-7") + Self.frame(0x9, [1, 2]) + Self.frame(0x2, [0xFF, 0x00]) + Self.text("s1-8")
        let input = DiscardedInput(decoding: bytes)
        #expect(input.messages.map(\.payload) == [Array("s1-7".utf8), [0xFF, 0x00], Array("s1-8".utf8)])
        #expect(input.messages.map(\.binary) == [false, true, false])
        #expect(!input.endsInsideMessage)
        #expect(input.undecodedByteCount == 0)
    }

    @Test("a message split over frames is whole at its final frame; one cut by the drop is partial")
    func fragmentedAndCut() {
        let whole = Self.text("hel", fin: false) + Self.frame(0x0, Array("lo".utf8))
        #expect(Self.payloads(DiscardedInput(decoding: whole)) == ["hello"])
        let begun = DiscardedInput(decoding: Self.text("s2-1") + Self.text("s2", fin: false))
        #expect(Self.payloads(begun) == ["s2-1"])
        #expect(begun.endsInsideMessage)
        #expect(begun.undecodedByteCount == 0)
    }

    @Test("a frame cut inside its header or payload is partial, and its bytes undecoded")
    func cutFrame() {
        let next = Self.text("s3-2")
        for cut in 1..<next.count {
            let input = DiscardedInput(decoding: Self.text("s3-1") + next[..<cut])
            #expect(Self.payloads(input) == ["s3-1"], "cut at \(cut)")
            #expect(input.endsInsideMessage, "cut at \(cut)")
            #expect(input.undecodedByteCount == cut, "cut at \(cut)")
        }
    }

    @Test("a message libwebsockets had begun delivering is finished by its continuation frames")
    func continuesDeliveredMessage() {
        let begun = DiscardedInput.InProgress(binary: false, payload: Array("s4-".utf8), remainingInFrame: 0)
        let input = DiscardedInput(decoding: Self.frame(0x0, Array("10".utf8)) + Self.text("s4-11"), continuing: begun)
        #expect(Self.payloads(input) == ["s4-10", "s4-11"])
        #expect(!input.endsInsideMessage)
        let unfinished = DiscardedInput(decoding: [], continuing: begun)
        #expect(unfinished.messages.isEmpty)
        #expect(unfinished.endsInsideMessage)
    }

    @Test("the rest of a frame libwebsockets was parsing is skipped: the message counts, its text cannot be read")
    func skipsRestOfParsedFrame() {
        let begun = DiscardedInput.InProgress(binary: false, payload: Array("s5".utf8), remainingInFrame: 3)
        let input = DiscardedInput(decoding: [0xAA, 0xBB, 0xCC] + Self.text("s5-2"), continuing: begun)
        #expect(Self.payloads(input) == [nil, "s5-2"])
        #expect(!input.endsInsideMessage)
        // Nothing after the frame: whether it was the message's last cannot be told.
        let alone = DiscardedInput(decoding: [0xAA, 0xBB, 0xCC], continuing: begun)
        #expect(alone.messages.isEmpty)
        #expect(alone.endsInsideMessage)
        let short = DiscardedInput(decoding: [0xAA], continuing: begun)
        #expect(short.messages.isEmpty)
        #expect(short.endsInsideMessage)
    }

    @Test("a compressed message counts without its text; frames no client may send are left undecoded")
    func compressedAndInvalid() {
        let compressed = DiscardedInput(decoding: Self.frame(0x1, [0xF2, 0x48, 0x05, 0x00], compressed: true))
        #expect(compressed.messages == [.init(binary: false, payload: nil)])
        var unmasked = Self.text("s6-1")
        unmasked[1] &= 0x7F
        let invalid = DiscardedInput(decoding: Self.text("s6-0") + unmasked)
        #expect(Self.payloads(invalid) == ["s6-0"])
        #expect(invalid.undecodedByteCount == unmasked.count)
        #expect(invalid.endsInsideMessage)
        let stray = DiscardedInput(decoding: Self.frame(0x0, [1]))
        #expect(stray.messages.isEmpty)
        #expect(stray.undecodedByteCount == 7)
    }
}
