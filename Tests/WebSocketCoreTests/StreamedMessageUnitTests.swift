import FoundationEssentials
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

/// A server frame (unmasked) with `payload`.
private func serverFrame(_ opcode: UInt8, fin: Bool = true, rsv1: Bool = false, _ payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
    switch payload.count {
    case ..<126: bytes.append(UInt8(payload.count))
    case ..<65536: bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    default:
        bytes.append(127)
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: payload.count >> (56 - 8 * $0)) }
    }
    return bytes + payload
}

/// What a streaming assembler makes of `chunks`, fed one after the other.
private func streamedEvents(
    _ chunks: [[UInt8]], limit: Int = .max, inflater: MessageInflater? = nil
) -> [InboundEvent] {
    var assembler = MessageAssembler(
        maxMessageSize: 16, inflater: inflater, streaming: MessageAssembler.Streaming(maxMessageSize: limit))
    var events: [InboundEvent] = []
    for chunk in chunks { chunk.withUnsafeBytes { _ = assembler.read($0, into: &events) } }
    return events
}

@Suite("MessageAssembler, streaming: pieces as they arrive, an empty piece at the end")
struct StreamingAssemblerTests {
    @Test("an unfragmented binary message read in three chunks: three pieces and the end, past maxMessageSize")
    func binaryPieces() {
        let payload = (0..<40).map { UInt8($0) }
        let bytes = serverFrame(0x2, payload)
        let events = streamedEvents([Array(bytes[..<10]), Array(bytes[10..<30]), Array(bytes[30...])])
        #expect(events == [
            .message(.binary(Data(payload[0..<8]))), .message(.binary(Data(payload[8..<28]))),
            .message(.binary(Data(payload[28...]))), .message(.binary(Data())),
        ])
    }

    @Test("text split inside a code point across frames: each piece ends on a code point; the pieces join to the text")
    func textOnCodePoints() {
        let text = Array("aé😀z".utf8)   // 61 C3 A9 F0 9F 98 80 7A
        let frames = serverFrame(0x1, fin: false, Array(text[0..<2]))   // "a", half of é
            + serverFrame(0x0, fin: false, Array(text[2..<5]))          // rest of é, half of 😀
            + serverFrame(0x0, Array(text[5...]))                       // rest of 😀, "z"
        #expect(streamedEvents([frames]) == [
            .message(.text("a")), .message(.text("é")), .message(.text("😀z")), .message(.text("")),
        ])
    }

    @Test("every split of a fragmented text message gives pieces that join to the same text")
    func everySplit() {
        let text = "héllo 😀 wörld"
        let utf8 = Array(text.utf8)
        let frames = serverFrame(0x1, fin: false, Array(utf8[0..<5])) + serverFrame(0x0, Array(utf8[5...]))
        for point in 1..<frames.count {
            let events = streamedEvents([Array(frames[..<point]), Array(frames[point...])])
            var joined = ""
            for event in events.dropLast() {
                guard case .message(.text(let piece)) = event, !piece.isEmpty else {
                    Issue.record("split at \(point): \(event) is not a text piece")
                    continue
                }
                joined += piece
            }
            #expect(joined == text, "split at \(point)")
            #expect(events.last == .message(.text("")), "split at \(point)")
        }
    }

    @Test("invalid UTF-8 split across frames fails with 1007 after the valid piece before it")
    func invalidAcrossFrames() {
        let frames = serverFrame(0x1, fin: false, [0x68, 0xF0, 0x9F]) + serverFrame(0x0, [0x28])
        #expect(streamedEvents([frames]) == [
            .message(.text("h")), .failure(.invalidPayload("invalid UTF-8 in a text message")),
        ])
    }

    @Test("a text message that ends inside a code point fails with 1007")
    func truncatedText() {
        #expect(streamedEvents([serverFrame(0x1, [0x68, 0xC3])]) == [
            .message(.text("h")), .failure(.invalidPayload("a text message ends inside a UTF-8 sequence")),
        ])
    }

    @Test("the streamed limit: a frame header that would pass it fails with 1009 before its payload")
    func limit() {
        let events = streamedEvents([serverFrame(0x2, fin: false, [1, 2, 3]) + serverFrame(0x0, [4, 5, 6])], limit: 5)
        #expect(events == [.message(.binary(Data([1, 2, 3]))), .failure(.tooBig(limit: 5))])
    }

    @Test("an empty message is just its end; control frames between pieces still arrive")
    func emptyAndControl() {
        let bytes = serverFrame(0x2, [])
            + serverFrame(0x1, fin: false, Array("ab".utf8)) + serverFrame(0x9, [7]) + serverFrame(0x0, Array("c".utf8))
        #expect(streamedEvents([bytes]) == [
            .message(.binary(Data())), .message(.text("ab")), .ping([7]), .message(.text("c")), .message(.text("")),
        ])
    }

    @Test("a compressed message is inflated piece by piece, within the streamed limit")
    func compressed() throws {
        let text = String(repeating: "compressible words ", count: 400)
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        var compressed: [UInt8] = []
        Array(text.utf8).withUnsafeBytes { deflater.compress($0, into: &compressed, moreFollow: false) }
        let half = compressed.count / 2
        let frames = serverFrame(0x1, fin: false, rsv1: true, Array(compressed[..<half]))
            + serverFrame(0x0, Array(compressed[half...]))
        let events = streamedEvents([frames], inflater: MessageInflater(parameters: DeflateParameters()))
        var joined = ""
        for case .message(.text(let piece)) in events { joined += piece }
        #expect(joined == text)
        #expect(events.last == .message(.text("")))
        let limited = streamedEvents([frames], limit: 1000, inflater: MessageInflater(parameters: DeflateParameters()))
        #expect(limited.last == .failure(.tooBig(limit: 1000)))
    }

    @Test("a compressed bomb read at once comes out in bounded pieces: 8 MiB of zeros from 8 KiB")
    func boundedPieces() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        var compressed: [UInt8] = []
        [UInt8](repeating: 0, count: 8 << 20).withUnsafeBytes { deflater.compress($0, into: &compressed, moreFollow: false) }
        #expect(compressed.count > 4 * MessageAssembler.streamedInflateSlice)
        let events = streamedEvents([serverFrame(0x2, rsv1: true, compressed)], inflater: MessageInflater(parameters: DeflateParameters()))
        var total = 0
        var largest = 0
        for case .message(.binary(let piece)) in events {
            total += piece.count
            largest = max(largest, piece.count)
        }
        #expect(total == 8 << 20)
        #expect(largest <= MessageAssembler.streamedPieceTarget + 1100 * MessageAssembler.streamedInflateSlice)
        #expect(events.last == .message(.binary(Data())))
    }

    @Test("lastCodePointBoundary keeps an incomplete sequence back, never a complete one")
    func boundary() {
        #expect(MessageAssembler.lastCodePointBoundary(in: []) == 0)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0x61]) == 1)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0x61, 0xC3]) == 1)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0x61, 0xC3, 0xA9]) == 3)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0xF0, 0x9F, 0x98]) == 0)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0xF0, 0x9F, 0x98, 0x80]) == 4)
        #expect(MessageAssembler.lastCodePointBoundary(in: [0x61, 0xE2, 0x82]) == 1)
    }
}

@Suite("Streamed messages out: the frames of the pieces, and the queue they hold")
struct StreamedSendUnitTests {
    @Test("pieces become one message: the kind's opcode first, continuations after, FIN only on the last")
    func pieceFrames() {
        var writer = FrameWriter()
        writer.enqueue(OutgoingMessage(message: .binary(Data("ab".utf8)), options: .uncompressed, position: .first(.text)))
        writer.enqueue(OutgoingMessage(message: .binary(Data("cd".utf8)), options: .uncompressed, position: .middle))
        writer.enqueue(OutgoingMessage(message: .binary(Data()), options: .uncompressed, position: .last(.text)))
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { writer.fill($0) }
        // Three masked frames: 2 header bytes, 4 key bytes, the payload.
        let headers = [buffer[0], buffer[1], buffer[8], buffer[9], buffer[16], buffer[17]]
        #expect(headers == [0x01, 0x82, 0x00, 0x82, 0x80, 0x80])
        #expect(count == 22)
        var tally = writer.takeWrittenTally()
        #expect(tally.textMessages == 1)
        #expect(tally.binaryMessages == 0)
        tally = writer.takeWrittenTally()
        #expect(tally.bytes == 0)
    }

    @Test("a stream holds the queue: other messages wait, its pieces wait only for room, heartbeats go after it")
    func queueHeldByStream() {
        var queue = OutboundQueue(highWatermark: 100)
        queue.append(OutgoingMessage(message: .binary(Data(count: 10)), position: .first(.binary)))
        #expect(queue.isHeldByStream)
        #expect(queue.mustWait(.text("other")))
        #expect(!queue.mustWait(OutgoingMessage(message: .binary(Data(count: 10)), position: .middle)))
        queue.appendFromLoop(OutgoingMessage(message: .text("heartbeat")))
        queue.append(OutgoingMessage(message: .binary(Data(count: 10)), position: .last(.binary)))
        #expect(!queue.isHeldByStream)
        var batch: [OutgoingMessage] = []
        var admitted: [OutboundQueue.Sender] = []
        queue.take(budget: 1000, into: &batch, admitted: &admitted)
        #expect(batch.map(\.position) == [.first(.binary), .last(.binary), .whole])
        #expect(batch.last?.message == .text("heartbeat"))
        #expect(!queue.mustWait(.text("other")))
    }
}
