import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

// MARK: - Helpers


/// One frame as the client wrote it, unmasked.
private struct ClientFrame: Equatable, CustomStringConvertible {
    var isFinal: Bool
    var isCompressed: Bool
    var opcode: UInt8
    /// The header without its masking key: flags, opcode and the length as encoded.
    var header: [UInt8]
    var key: MaskingKey
    var payload: [UInt8]

    var description: String {
        "\(isFinal ? "FIN " : "")\(isCompressed ? "RSV1 " : "")op \(opcode) (\(payload.count) bytes)"
    }

    /// The same frame as a server would send it: unmasked.
    var serverBytes: [UInt8] {
        var bytes = header
        bytes[1] &= 0x7F
        return bytes + payload
    }

    /// Equal apart from the masking key, which is random.
    func sameContent(as other: ClientFrame) -> Bool {
        isFinal == other.isFinal && isCompressed == other.isCompressed && opcode == other.opcode
            && header == other.header && payload == other.payload
    }
}

/// Splits what a client wrote into frames, checking each is masked and its header well
/// formed; records an issue for bytes after the last whole frame.
private func parseClientFrames(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> [ClientFrame] {
    var frames: [ClientFrame] = []
    var index = 0
    while index < bytes.count {
        guard bytes.count - index >= 2 else { break }
        let first = bytes[index]
        let second = bytes[index + 1]
        #expect(second & 0x80 != 0, "frame \(frames.count) is not masked", sourceLocation: sourceLocation)
        #expect(first & 0x30 == 0, "frame \(frames.count) has RSV2 or RSV3", sourceLocation: sourceLocation)
        var headerLength = 2
        var length = Int(second & 0x7F)
        if length == 126 {
            guard bytes.count - index >= 4 else { break }
            length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            #expect(length >= 126, "a 16-bit length for \(length) bytes", sourceLocation: sourceLocation)
            headerLength = 4
        } else if length == 127 {
            guard bytes.count - index >= 10 else { break }
            length = bytes[(index + 2)..<(index + 10)].reduce(0) { $0 << 8 | Int($1) }
            #expect(length >= 65536, "a 64-bit length for \(length) bytes", sourceLocation: sourceLocation)
            headerLength = 10
        }
        guard bytes.count - index >= headerLength + 4 + length else { break }
        let keyStart = index + headerLength
        let key = MaskingKey(bytes[keyStart], bytes[keyStart + 1], bytes[keyStart + 2], bytes[keyStart + 3])
        var payload = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeBytes { all in
            payload.withUnsafeMutableBytes { key.copyMasked(UnsafeRawBufferPointer(rebasing: all[(keyStart + 4)..<(keyStart + 4 + length)]), to: $0.baseAddress!) }
        }
        frames.append(ClientFrame(isFinal: first & 0x80 != 0, isCompressed: first & 0x40 != 0, opcode: first & 0x0F,
                                  header: Array(bytes[index..<keyStart]), key: key, payload: payload))
        index = keyStart + 4 + length
    }
    #expect(index == bytes.count, "\(bytes.count - index) bytes after the last whole frame", sourceLocation: sourceLocation)
    return frames
}

/// Fills buffers of `size(callIndex)` bytes until the writer has nothing left; checks that
/// no call writes past its buffer and that a call writes something while work remains.
private func drain(
    _ writer: inout FrameWriter, bufferSize size: (Int) -> Int, maxCalls: Int = 1_000_000,
    sourceLocation: SourceLocation = #_sourceLocation
) -> [UInt8] {
    var output: [UInt8] = []
    var calls = 0
    while writer.hasWork, calls < maxCalls {
        let bufferSize = size(calls)
        calls += 1
        // An odd offset into a larger buffer, with a guard area after it.
        var memory = [UInt8](repeating: 0xA5, count: bufferSize + 35)
        let written = memory.withUnsafeMutableBytes {
            writer.fill(UnsafeMutableRawBufferPointer(rebasing: $0[3..<(3 + bufferSize)]))
        }
        guard written > 0 else {
            Issue.record("fill wrote nothing into \(bufferSize) bytes while work remains", sourceLocation: sourceLocation)
            break
        }
        if written > bufferSize || memory[(3 + bufferSize)...].contains(where: { $0 != 0xA5 }) {
            Issue.record("wrote past a buffer of \(bufferSize) bytes", sourceLocation: sourceLocation)
            break
        }
        output += memory[3..<(3 + written)]
    }
    return output
}

private func drain(_ writer: inout FrameWriter, bufferSize: Int, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    drain(&writer, bufferSize: { _ in bufferSize }, sourceLocation: sourceLocation)
}

/// Reads client frames back as a server would (unmasked): the events they amount to.
private func events(of frames: [ClientFrame], inflater: MessageInflater? = nil) -> [InboundEvent] {
    var assembler = MessageAssembler(maxMessageSize: 1 << 30, inflater: inflater)
    var events: [InboundEvent] = []
    let bytes = frames.flatMap(\.serverBytes)
    bytes.withUnsafeBytes { _ = assembler.read($0, into: &events) }
    return events
}

/// A binary message of `count` bytes cycling through 251 values from `seed` (a prime
/// cycle, so no frame boundary lines up with it); built by doubling, fast in debug builds.
private func binary(_ count: Int, seed: UInt8 = 0) -> WebSocketMessage {
    var bytes = (0..<251).map { UInt8(truncatingIfNeeded: $0 &+ Int(seed)) }
    while bytes.count < count { bytes += bytes }
    return .binary(Data(bytes.prefix(count)))
}

private let maxFramePayload = FrameWriter.maxFramePayload

// MARK: - Tests

@Suite("FrameWriter: frames into caller memory")
struct FrameWriterTests {
    @Test("a message over maxFramePayload is fragmented; control frames go between fragments, never inside a frame")
    func controlFramesBetweenFragments() {
        #expect(maxFramePayload == 1 << 20)
        var writer = FrameWriter()
        let big = binary(2 * maxFramePayload + 500_000)
        writer.enqueue(big)
        writer.enqueue(.text("after"))
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var calls = 0
        while writer.hasWork {
            let count = buffer.withUnsafeMutableBytes { writer.fill($0) }
            #expect(count > 0)
            guard count > 0 else { break }
            output += buffer[..<count]
            calls += 1
            if calls == 1 { writer.enqueueControl(.ping, payload: [1]) }
            if calls == 20 {
                writer.enqueueControl(.pong, payload: [2])
                writer.enqueueControl(.ping, payload: [3])
            }
            if output.count < big.byteCount { #expect(writer.messageBytesWritten == 0) }
        }
        let frames = parseClientFrames(output)
        #expect(frames.map(\.description) == [
            "op 2 (1048576 bytes)", "FIN op 9 (1 bytes)",
            "op 0 (1048576 bytes)", "FIN op 10 (1 bytes)", "FIN op 9 (1 bytes)",
            "FIN op 0 (500000 bytes)", "FIN op 1 (5 bytes)",
        ])
        #expect(frames[0].header == [0x02, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 0])
        #expect(frames[5].header == [0x80, 0xFF, 0, 0, 0, 0, 0, 0x07, 0xA1, 0x20])
        #expect(events(of: frames) == [.ping([1]), .pong([2]), .ping([3]), .message(MessageContent(big)), .message(.text("after"))])
        #expect(writer.messageBytesWritten == big.byteCount + 5)
        #expect(writer.unwrittenMessages.isEmpty)
        // Every frame has its own key.
        #expect(Set(frames.map(\.key)).count == frames.count)
    }

    /// Queues the same messages, control frames and close on a fresh writer.
    static func loadedWriter() -> FrameWriter {
        var writer = FrameWriter()
        writer.enqueueControl(.ping, payload: Array(0..<14))
        writer.enqueueControl(.pong, payload: [])
        for message in messages { writer.enqueue(message) }
        writer.enqueueClose(CloseFrame(code: .normalClosure, reason: "done"))
        return writer
    }

    // Computed, not a static let: Data in a global looks leaked to LeakSanitizer.
    static var messages: [WebSocketMessage] { [
        .text("héllo"), .text(""), binary(0), binary(125), binary(126), binary(65535), binary(65536),
        .text(String(repeating: "€𝄞x", count: 100)), binary(1, seed: 9),
    ] }

    @Test("tiny and random buffers write the same frames as one huge buffer")
    func bufferSizesDoNotMatter() {
        var reference = Self.loadedWriter()
        let expected = parseClientFrames(drain(&reference, bufferSize: 1 << 22))
        #expect(expected.count == 2 + Self.messages.count + 1)
        #expect(events(of: expected) == [.ping(Array(0..<14)), .pong([])] + Self.messages.map { InboundEvent.message(MessageContent($0)) }
                + [.close(CloseFrame(code: .normalClosure, reason: "done"))])
        #expect(expected.last?.serverBytes == [0x88, 0x06, 0x03, 0xE8] + Array("done".utf8))
        for size in [20, 21, 31, 100, 131, 1000] {
            var writer = Self.loadedWriter()
            let frames = parseClientFrames(drain(&writer, bufferSize: size))
            #expect(frames.count == expected.count)
            #expect(zip(frames, expected).allSatisfy { $0.sameContent(as: $1) }, "buffers of \(size) bytes")
            #expect(writer.closeWritten)
        }
        var generator = SeededGenerator(state: 42)
        for round in 0..<8 {
            var writer = Self.loadedWriter()
            let frames = parseClientFrames(drain(&writer, bufferSize: { _ in 20 + Int(generator.next() % 400) }))
            #expect(frames.count == expected.count && zip(frames, expected).allSatisfy { $0.sameContent(as: $1) }, "round \(round)")
        }
    }

    @Test("the close frame comes after every queued message and control frame; nothing after it")
    func closeComesLast() {
        var writer = FrameWriter()
        #expect(!writer.hasWork && writer.wantsMessages && !writer.isClosing)
        writer.enqueue(.text("one"))
        writer.enqueue(binary(300))
        writer.enqueueClose(CloseFrame(code: .goingAway, reason: "bye"))
        #expect(writer.isClosing && !writer.wantsMessages && writer.hasWork)
        writer.enqueue(.text("too late"))
        writer.enqueueClose(CloseFrame(code: .normalClosure, reason: "second"))
        writer.enqueueControl(.ping, payload: [7])
        #expect(writer.unwrittenMessages == [.text("one"), binary(300)])
        let frames = parseClientFrames(drain(&writer, bufferSize: 4096))
        #expect(events(of: frames) == [.ping([7]), .message(.text("one")), .message(MessageContent(binary(300))),
                                        .close(CloseFrame(code: .goingAway, reason: "bye"))])
        #expect(writer.closeWritten && !writer.hasWork)
        writer.enqueueControl(.pong, payload: [8])
        writer.enqueue(.text("later"))
        writer.enqueueClose(CloseFrame(code: .normalClosure))
        #expect(!writer.hasWork)
        var buffer = [UInt8](repeating: 0, count: 256)
        #expect(buffer.withUnsafeMutableBytes { writer.fill($0) } == 0)
        #expect(writer.unwrittenMessages.isEmpty)
        #expect(writer.messageBytesWritten == 303)
    }

    @Test("a close frame that does not fit waits for a larger buffer")
    func closeNeedsRoom() {
        var writer = FrameWriter()
        writer.enqueueClose(CloseFrame(code: .normalClosure, reason: String(repeating: "x", count: 123)))
        var small = [UInt8](repeating: 0, count: 130)
        #expect(small.withUnsafeMutableBytes { writer.fill($0) } == 0)
        #expect(!writer.closeWritten && writer.hasWork)
        let frames = parseClientFrames(drain(&writer, bufferSize: 131))
        #expect(frames.count == 1 && frames[0].payload.count == 125 && writer.closeWritten)
    }

    @Test("enqueueCloseNow: messages not started are abandoned and reported unwritten")
    func closeNowAbandonsQueuedMessages() {
        var writer = FrameWriter()
        writer.enqueue(.text("one"))
        writer.enqueue(.text("two"))
        writer.enqueueControl(.pong, payload: [1])
        writer.enqueueCloseNow(CloseFrame(code: .protocolError, reason: "bad"))
        writer.enqueue(.text("three"))
        #expect(writer.unwrittenMessages == [.text("one"), .text("two")])
        let frames = parseClientFrames(drain(&writer, bufferSize: 4096))
        #expect(events(of: frames) == [.pong([1]), .close(CloseFrame(code: .protocolError, reason: "bad"))])
        #expect(writer.unwrittenMessages == [.text("one"), .text("two")])
        #expect(writer.messageBytesWritten == 0)
    }

    @Test("enqueueCloseNow mid-frame: the frame in progress is finished, then the close")
    func closeNowFinishesTheFrame() {
        var writer = FrameWriter()
        let first = binary(1000)
        writer.enqueue(first)
        writer.enqueue(.text("two"))
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 100)
        let count = buffer.withUnsafeMutableBytes { writer.fill($0) }
        #expect(count == 100)
        output += buffer[..<count]
        writer.enqueueCloseNow(CloseFrame(code: .protocolError))
        output += drain(&writer, bufferSize: 64)
        let frames = parseClientFrames(output)
        #expect(events(of: frames) == [.message(MessageContent(first)), .close(CloseFrame(code: .protocolError))])
        #expect(writer.unwrittenMessages == [.text("two")])
        #expect(writer.messageBytesWritten == 1000)
    }

    @Test("enqueueCloseNow between the fragments of a large message: the rest is abandoned")
    func closeNowBetweenFragments() {
        var writer = FrameWriter()
        let big = binary(2 * maxFramePayload + 10)
        writer.enqueue(big)
        writer.enqueue(.text("two"))
        // Exactly the first frame: its 14-byte header and 1 MiB of payload.
        var buffer = [UInt8](repeating: 0, count: 14 + maxFramePayload)
        var output: [UInt8] = []
        output += buffer[..<buffer.withUnsafeMutableBytes { writer.fill($0) }]
        #expect(output.count == buffer.count)
        writer.enqueueCloseNow(CloseFrame(code: .goingAway))
        output += drain(&writer, bufferSize: 1 << 16)
        let frames = parseClientFrames(output)
        #expect(frames.map(\.description) == ["op 2 (1048576 bytes)", "FIN op 8 (2 bytes)"])
        #expect(writer.unwrittenMessages == [big, .text("two")])
    }

    @Test("enqueueCloseNow inside a fragment of a large message: that frame ends, the rest is abandoned")
    func closeNowInsideAFragment() {
        var writer = FrameWriter()
        let big = binary(3 * maxFramePayload)
        writer.enqueue(big)
        writer.enqueue(.text("two"))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var output: [UInt8] = []
        output += buffer[..<buffer.withUnsafeMutableBytes { writer.fill($0) }]
        writer.enqueueCloseNow(CloseFrame(code: .goingAway))
        #expect(writer.unwrittenMessages.count == 2)
        output += drain(&writer, bufferSize: 1 << 16)
        let frames = parseClientFrames(output)
        #expect(frames.map(\.description) == ["op 2 (1048576 bytes)", "FIN op 8 (2 bytes)"])
        #expect(writer.unwrittenMessages == [big, .text("two")])
        #expect(writer.messageBytesWritten == 0)
    }

    @Test("compressed messages: RSV1 on the first frame only, and they inflate back")
    func compression() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        var writer = FrameWriter(deflater: deflater)
        var generator = SeededGenerator(state: 7692)
        let noise = WebSocketMessage.binary(Data(generator.bytes(maxFramePayload + 100_000)))
        let text = WebSocketMessage.text(String(repeating: "Grüße, compressed world. ", count: 80))
        let messages: [WebSocketMessage] = [
            text, .binary(Data(count: FrameWriter.defaultCompressionThreshold - 1)), .text(String(repeating: "z", count: FrameWriter.defaultCompressionThreshold)),
            noise, .text("short"), .text(""), text,
        ]
        for message in messages { writer.enqueue(message) }
        writer.enqueueClose(CloseFrame(code: .normalClosure))
        let frames = parseClientFrames(drain(&writer, bufferSize: 1 << 18))
        #expect(frames.map { "\($0.isCompressed ? "RSV1 " : "")op \($0.opcode)" } == [
            "RSV1 op 1", "op 2", "RSV1 op 1", "RSV1 op 2", "op 0", "op 1", "op 1", "RSV1 op 1", "op 8",
        ])
        #expect(frames[0].payload.count < text.byteCount / 10)
        // Uncompressed messages carry their bytes as they are.
        #expect(frames[1].payload == [UInt8](repeating: 0, count: FrameWriter.defaultCompressionThreshold - 1))
        #expect(frames[5].payload == Array("short".utf8))
        // The last text refers back to the first through the shared window.
        #expect(frames[7].payload.count < frames[0].payload.count)
        let inflater = MessageInflater(parameters: DeflateParameters())
        #expect(events(of: frames, inflater: inflater) == messages.map { InboundEvent.message(MessageContent($0)) } + [.close(CloseFrame(code: .normalClosure))])
        #expect(writer.messageBytesWritten == messages.reduce(0) { $0 + $1.byteCount })
    }

    @Test("compress: false and the threshold keep messages uncompressed; the window still carries over")
    func optingOut() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        var writer = FrameWriter(deflater: deflater, threshold: 1000)
        let secret = WebSocketMessage.text(#"{"token":"\#(String(repeating: "s3cr3t", count: 300))"}"#)
        let long = WebSocketMessage.text(String(repeating: "a compressible sentence. ", count: 60))
        writer.enqueue(long, compress: false)
        writer.enqueue(long)
        writer.enqueue(secret, compress: false)
        writer.enqueue(.text(String(repeating: "q", count: 999)))
        writer.enqueue(.text(String(repeating: "q", count: 1000)))
        let frames = parseClientFrames(drain(&writer, bufferSize: 1 << 16))
        #expect(frames.map(\.isCompressed) == [false, true, false, false, true])
        #expect(frames[0].payload == Array(String(repeating: "a compressible sentence. ", count: 60).utf8))
        #expect(frames[2].payload.count == secret.byteCount)
        let inflater = MessageInflater(parameters: DeflateParameters())
        #expect(events(of: frames, inflater: inflater).count == 5)
    }

    @Test("without context takeover, zlib's memory is freed between messages (the inflater's once a read is used up)")
    func noContextTakeoverFreesMemory() throws {
        var parameters = DeflateParameters()
        parameters.clientNoContextTakeover = true
        parameters.serverNoContextTakeover = true
        let deflater = try MessageDeflater(parameters: parameters)
        #expect(!deflater.holdsCompressorMemory)
        var output: [UInt8] = []
        let text = Array(String(repeating: "free me after the message. ", count: 40).utf8)
        text.withUnsafeBytes { deflater.compress($0, into: &output) }
        #expect(!deflater.holdsCompressorMemory)
        let inflater = MessageInflater(parameters: parameters)
        #expect(!inflater.holdsDecompressorMemory)
        var inflated: [UInt8] = []
        #expect(output.withUnsafeBytes { inflater.inflate($0, into: &inflated, limit: 1 << 20) } == .ok)
        #expect(inflater.holdsDecompressorMemory)
        #expect(inflater.finishMessage(into: &inflated, limit: 1 << 20) == .ok)
        #expect(inflater.holdsDecompressorMemory)   // kept for the read's next message
        inflater.pausedBetweenMessages()
        #expect(!inflater.holdsDecompressorMemory)
        #expect(inflated == text)
        // The next message starts a fresh stream, and still round-trips.
        output.removeAll()
        inflated.removeAll()
        text.withUnsafeBytes { deflater.compress($0, into: &output) }
        _ = output.withUnsafeBytes { inflater.inflate($0, into: &inflated, limit: 1 << 20) }
        #expect(inflater.finishMessage(into: &inflated, limit: 1 << 20) == .ok)
        #expect(inflated == text)
        // Reset, not freed, within a read: the message after it starts from an empty window.
        inflated.removeAll()
        _ = output.withUnsafeBytes { inflater.inflate($0, into: &inflated, limit: 1 << 20) }
        #expect(inflater.finishMessage(into: &inflated, limit: 1 << 20) == .ok)
        #expect(inflated == text)

        // In a burst (more messages queued) they are kept, and the window still emptied.
        output.removeAll()
        text.withUnsafeBytes { deflater.compress($0, into: &output, moreFollow: true) }
        #expect(deflater.holdsCompressorMemory)
        var second: [UInt8] = []
        text.withUnsafeBytes { deflater.compress($0, into: &second) }
        #expect(second == output)  // the same bytes: nothing of the first message was kept
        #expect(!deflater.holdsCompressorMemory)

        // With context takeover the buffers come with the first message; they stay when
        // holding (releasesWhenIdle: false), else only the window does.
        let keeping = try MessageDeflater(parameters: DeflateParameters(), releasesWhenIdle: false)
        #expect(!keeping.holdsCompressorMemory)
        output.removeAll()
        text.withUnsafeBytes { keeping.compress($0, into: &output) }
        #expect(keeping.holdsCompressorMemory)
        let releasing = try MessageDeflater(parameters: DeflateParameters())
        text.withUnsafeBytes { releasing.compress($0, into: &output) }
        #expect(!releasing.holdsCompressorMemory)
        #expect(releasing.savedWindowByteCount == text.count)
    }

    @Test("a pong flood past the limit drops the oldest pongs; pings stay")
    func pongFlood() {
        var writer = FrameWriter()
        writer.enqueueControl(.ping, payload: [0xFF])
        for index in 0..<300 { writer.enqueueControl(.pong, payload: [UInt8(index >> 8), UInt8(index & 0xFF)]) }
        let frames = parseClientFrames(drain(&writer, bufferSize: 4096))
        #expect(frames.count == 256)
        let newest: [InboundEvent] = (45..<300).map { index in .pong([UInt8(index >> 8), UInt8(index & 0xFF)]) }
        #expect(events(of: frames) == [.ping([0xFF])] + newest)

        var limited = FrameWriter()
        for index in 0..<3 { limited.enqueueControl(.ping, payload: [UInt8(100 + index)], limit: 4) }
        for index in 0..<10 { limited.enqueueControl(.pong, payload: [UInt8(index)], limit: 4) }
        #expect(events(of: parseClientFrames(drain(&limited, bufferSize: 64)))
                == [.ping([100]), .ping([101]), .ping([102]), .pong([9])])
    }

    @Test("messageBytesWritten counts whole messages only, before compression")
    func messageBytesWritten() {
        var writer = FrameWriter()
        writer.enqueue(.text("héllo"))
        writer.enqueue(binary(200))
        writer.enqueue(.text(""))
        var buffer = [UInt8](repeating: 0, count: 6 + 6 + 8 + 100)
        _ = buffer.withUnsafeMutableBytes { writer.fill($0) }
        #expect(writer.messageBytesWritten == 6)
        _ = buffer.withUnsafeMutableBytes { writer.fill($0) }
        #expect(writer.messageBytesWritten == 206)
        #expect(writer.hasWork == false)
        #expect(writer.unwrittenMessages.isEmpty)
    }

    @Test("wantsMessages: at most 64 queued")
    func wantsMessages() {
        var writer = FrameWriter()
        for index in 0..<64 {
            #expect(writer.wantsMessages, "\(index)")
            writer.enqueue(.text("\(index)"))
        }
        #expect(!writer.wantsMessages)
        var buffer = [UInt8](repeating: 0, count: 12)
        _ = buffer.withUnsafeMutableBytes { writer.fill($0) }
        #expect(writer.wantsMessages)
    }

    @Test("payloads are masked: the plain bytes do not appear on the wire")
    func masked() {
        var writer = FrameWriter()
        writer.enqueue(.text(String(repeating: "a", count: 1000)))
        let bytes = drain(&writer, bufferSize: 2048)
        #expect(bytes.count == 8 + 1000)
        #expect(bytes[8...].filter { $0 == UInt8(ascii: "a") }.count < 500)
        #expect(parseClientFrames(bytes).first?.payload == Array(repeating: UInt8(ascii: "a"), count: 1000))
    }
}

extension MessageContent {
    /// The codec's form of `message`, to compare what the writer wrote with what was sent.
    fileprivate init(_ message: WebSocketMessage) {
        switch message {
        case .text(let string): self = .text(string)
        case .binary(let data): self = .binary(data)
        }
    }
}
