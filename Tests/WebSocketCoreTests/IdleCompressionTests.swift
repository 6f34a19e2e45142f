import Testing
@testable import WebSocketCore
import WebSocketTestServer

/// Distinct JSON texts like a trade feed's, `size` bytes each (compressible, with matches near
/// and far), seeded.
private func jsonMessages(count: Int, size: Int, seed: UInt64 = 39) -> [[UInt8]] {
    var generator = SeededGenerator(state: seed)
    var sequence = 0
    return (0..<count).map { _ in
        var text = "["
        while text.utf8.count < size {
            sequence += 1
            let symbol = ["BTCUSD", "ETHUSD", "SOLUSD", "XRPUSD"][generator.below(4)]
            let price = generator.below(6_000_000)
            let quantity = generator.below(50_000)
            let side = generator.below(2) == 0 ? "buy" : "sell"
            text += #"{"sym":"\#(symbol)","px":\#(price),"qty":\#(quantity),"#
                + #""ts":\#(1_700_000_000_000 + sequence * 37),"side":"\#(side)"},"#
        }
        return Array(text.utf8.prefix(size))
    }
}

/// Compresses `message` as the only one queued (`moreFollow: false`).
private func compress(_ message: [UInt8], with deflater: MessageDeflater) -> [UInt8] {
    var output: [UInt8] = []
    message.withUnsafeBytes { deflater.compress($0, into: &output) }
    return output
}

/// Inflates one whole message; `nil` when the inflater reported anything but `.ok`.
private func inflate(_ payload: [UInt8], with inflater: MessageInflater) -> [UInt8]? {
    var output: [UInt8] = []
    guard payload.withUnsafeBytes({ inflater.inflate($0, into: &output, limit: 1 << 22) }) == .ok,
          inflater.finishMessage(into: &output, limit: 1 << 22) == .ok
    else { return nil }
    return output
}

private func parameters(windowBits: Int) -> DeflateParameters {
    var parameters = DeflateParameters()
    parameters.clientMaxWindowBits = windowBits
    parameters.serverMaxWindowBits = windowBits
    return parameters
}

@Suite("permessage-deflate: zlib's state released while idle, the window kept")
struct IdleCompressionTests {
    /// 1 KiB JSON texts, then texts larger than any window, then 1 KiB again: later messages
    /// refer back across the idle pauses.
    static let messages: [[UInt8]] = jsonMessages(count: 20, size: 1024)
        + jsonMessages(count: 3, size: 40_000, seed: 40) + jsonMessages(count: 20, size: 1024, seed: 41)

    @Test("released after every message, the compressor's output inflates byte for byte through a held peer, and costs no more bytes",
          arguments: 9...15)
    func deflaterReleasedEveryMessage(windowBits: Int) throws {
        let releasing = try MessageDeflater(parameters: parameters(windowBits: windowBits))
        let holding = try MessageDeflater(parameters: parameters(windowBits: windowBits), releasesWhenIdle: false)
        // The peer: one inflater with the window, held throughout, as a server's is.
        let peer = MessageInflater(parameters: parameters(windowBits: windowBits), releasesWhenIdle: false)
        var releasedBytes = 0
        var heldBytes = 0
        for (index, message) in Self.messages.enumerated() {
            let payload = compress(message, with: releasing)
            #expect(!releasing.holdsCompressorMemory)
            #expect(releasing.savedWindowByteCount <= 1 << windowBits)
            let inflated = inflate(payload, with: peer)
            #expect(inflated == message, "message \(index), window \(windowBits)")
            releasedBytes += payload.count
            heldBytes += compress(message, with: holding).count
            #expect(holding.holdsCompressorMemory)
        }
        // The window restored is the one a held stream has, less at most 262 bytes zlib keeps
        // for lookahead: the output is the same size to within a fraction of a percent.
        #expect(Double(releasedBytes) <= Double(heldBytes) * 1.005, "released \(releasedBytes), held \(heldBytes)")
        // Context takeover still pays: the same messages compressed each on its own cost more.
        var fresh = 0
        for message in Self.messages {
            fresh += compress(message, with: try MessageDeflater(parameters: parameters(windowBits: windowBits))).count
        }
        #expect(releasedBytes < fresh)
    }

    @Test("the window kept is the bytes sent, capped at the window")
    func deflaterKeepsWhatItSaw() throws {
        let deflater = try MessageDeflater(parameters: parameters(windowBits: 12))
        #expect(deflater.savedWindowByteCount == 0)
        _ = compress(Array(Self.messages[0]), with: deflater)
        #expect(!deflater.holdsCompressorMemory)
        #expect(deflater.savedWindowByteCount == 1024)
        _ = compress(Array(Self.messages[1]), with: deflater)
        #expect(deflater.savedWindowByteCount == 2048)
        _ = compress(Self.messages[20], with: deflater)  // 40,000 bytes
        // zlib hands back the window less up to 258 bytes of lookahead it slid out.
        #expect((4096 - 262)...4096 ~= deflater.savedWindowByteCount)

        // Queued back to back (moreFollow), the state is kept until the last.
        var output: [UInt8] = []
        Self.messages[2].withUnsafeBytes { deflater.compress($0, into: &output, moreFollow: true) }
        #expect(deflater.holdsCompressorMemory)
        #expect(deflater.savedWindowByteCount == 0)
        Self.messages[3].withUnsafeBytes { deflater.compress($0, into: &output) }
        #expect(!deflater.holdsCompressorMemory)
    }

    @Test("released when a read is used up, the decompressor resumes byte for byte from the window it saw",
          arguments: 9...15)
    func inflaterReleasedBetweenReads(windowBits: Int) throws {
        let sender = try MessageDeflater(parameters: parameters(windowBits: windowBits), releasesWhenIdle: false)
        let inflater = MessageInflater(parameters: parameters(windowBits: windowBits))
        var received = 0
        for (index, message) in Self.messages.enumerated() {
            let inflated = inflate(compress(message, with: sender), with: inflater)
            #expect(inflated == message, "message \(index), window \(windowBits)")
            #expect(inflater.holdsDecompressorMemory)
            // Every other message, as if two arrived in one read.
            guard index % 2 == 1 else { continue }
            inflater.pausedBetweenMessages()
            received += message.count + Self.messages[index - 1].count
            #expect(!inflater.holdsDecompressorMemory)
            #expect(inflater.savedWindowByteCount == min(received, 1 << windowBits))
        }
    }

    @Test("holding the state (releasesWhenIdle: false) keeps zlib's memory between reads")
    func inflaterHeld() throws {
        let sender = try MessageDeflater(parameters: DeflateParameters())
        let inflater = MessageInflater(parameters: DeflateParameters(), releasesWhenIdle: false)
        #expect(!inflater.holdsDecompressorMemory)  // allocated by the first compressed message
        #expect(inflate(compress(Self.messages[0], with: sender), with: inflater) == Self.messages[0])
        inflater.pausedBetweenMessages()
        #expect(inflater.holdsDecompressorMemory)
        #expect(inflater.savedWindowByteCount == 0)
    }

    @Test("the decompressor's window is the one the server answered: a reference further back into an earlier message is corrupt")
    func inflaterWindowIsTheAnswered() throws {
        // 4 KiB of noise, then a message repeating its first 1 KiB: the repeat is 4 KiB back,
        // in the previous message, so only the window can hold it.
        var generator = SeededGenerator(state: 12)
        let noise = generator.bytes(4096)
        let repeated = Array(noise[..<1024])
        let sender = try MessageDeflater(parameters: parameters(windowBits: 15))
        let first = compress(noise, with: sender)
        let second = compress(repeated, with: sender)
        #expect(second.count < 100)  // the repeat was found
        for bits in [15, 13] {
            let inflater = MessageInflater(parameters: parameters(windowBits: bits))
            #expect(inflate(first, with: inflater) == noise)
            inflater.pausedBetweenMessages()
            #expect(inflate(second, with: inflater) == repeated, "window \(bits)")
        }
        // A server that answered 10 bits and then refers 4 KiB back broke its word.
        let small = MessageInflater(parameters: parameters(windowBits: 10))
        #expect(inflate(first, with: small) == noise)
        small.pausedBetweenMessages()
        #expect(small.savedWindowByteCount == 1024)
        let refused = inflate(second, with: small) == nil
        #expect(refused)
    }
}
