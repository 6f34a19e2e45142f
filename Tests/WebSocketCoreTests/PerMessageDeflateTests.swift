import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer


/// Compresses one message into a fresh buffer.
private func compressMessage(_ message: [UInt8], with deflater: MessageDeflater) -> [UInt8] {
    var output: [UInt8] = []
    message.withUnsafeBytes { deflater.compress($0, into: &output) }
    return output
}

/// Inflates one whole message given in `pieces`, then finishes it.
private func inflateMessage(
    _ pieces: [[UInt8]], with inflater: MessageInflater, limit: Int = .max
) -> (outcome: MessageInflater.InflateOutcome, message: [UInt8]) {
    var output: [UInt8] = []
    for piece in pieces {
        let outcome = piece.withUnsafeBytes { inflater.inflate($0, into: &output, limit: limit) }
        guard outcome == .ok else { return (outcome, output) }
    }
    return (inflater.finishMessage(into: &output, limit: limit), output)
}

private func inflateMessage(
    _ payload: [UInt8], with inflater: MessageInflater, limit: Int = .max
) -> (outcome: MessageInflater.InflateOutcome, message: [UInt8]) {
    inflateMessage([payload], with: inflater, limit: limit)
}

private func isCorrupt(_ outcome: MessageInflater.InflateOutcome) -> Bool {
    if case .corrupt = outcome { return true }
    return false
}

private let hello = Array("Hello".utf8)

@Suite("permessage-deflate: RFC 7692 section 7.2.3 examples")
struct PerMessageDeflateExampleTests {
    @Test("7.2.3.1: \"Hello\" in one compressed block")
    func oneCompressedBlock() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let payload = compressMessage(hello, with: deflater)
        #expect(payload == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])

        let inflated = inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters()))
        #expect(inflated.outcome == .ok)
        #expect(inflated.message == hello)
    }

    @Test("7.2.3.2: the second \"Hello\" refers to the first through the shared window")
    func sharedSlidingWindow() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        #expect(compressMessage(hello, with: deflater) == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        #expect(compressMessage(hello, with: deflater) == [0xF2, 0x00, 0x11, 0x00, 0x00])

        let inflater = MessageInflater(parameters: DeflateParameters())
        #expect(inflateMessage([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], with: inflater) == (.ok, hello))
        #expect(inflateMessage([0xF2, 0x00, 0x11, 0x00, 0x00], with: inflater) == (.ok, hello))
    }

    @Test("client_no_context_takeover: every message compresses as if it were the first")
    func clientNoContextTakeover() throws {
        var parameters = DeflateParameters()
        parameters.clientNoContextTakeover = true
        let deflater = try MessageDeflater(parameters: parameters)
        for _ in 0..<3 {
            #expect(compressMessage(hello, with: deflater) == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        }
    }

    @Test("server_no_context_takeover: a back-reference into the previous message is corrupt")
    func serverNoContextTakeover() {
        var parameters = DeflateParameters()
        parameters.serverNoContextTakeover = true
        let inflater = MessageInflater(parameters: parameters)
        #expect(inflateMessage([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], with: inflater) == (.ok, hello))
        #expect(isCorrupt(inflateMessage([0xF2, 0x00, 0x11, 0x00, 0x00], with: inflater).outcome))
    }

    @Test("7.2.3.3: a stored block (no compression)")
    func storedBlock() {
        let payload: [UInt8] = [0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00]
        #expect(inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters())) == (.ok, hello))
    }

    @Test("7.2.3.4: a block with BFINAL set; the window survives for the next message")
    func finalBlock() {
        let inflater = MessageInflater(parameters: DeflateParameters())
        #expect(inflateMessage([0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00], with: inflater) == (.ok, hello))
        // Context takeover across the ended stream: distance 5 reaches the first "Hello".
        #expect(inflateMessage([0xF2, 0x00, 0x11, 0x00, 0x00], with: inflater) == (.ok, hello))
        // Without the trailing 0x00 octet the RFC asks for, the message is still accepted.
        #expect(inflateMessage([0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], with: inflater) == (.ok, hello))
        #expect(inflateMessage([0xF2, 0x00, 0x11, 0x00, 0x00], with: inflater) == (.ok, hello))
    }

    @Test("7.2.3.5: two deflate blocks in one message")
    func twoBlocks() {
        let payload: [UInt8] = [0xF2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xCA, 0xC9, 0xC9, 0x07, 0x00]
        #expect(inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters())) == (.ok, hello))
    }

    @Test("7.2.3.6: an empty message is the single octet 0x00, fresh or after other messages")
    func emptyMessage() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let inflater = MessageInflater(parameters: DeflateParameters())
        #expect(compressMessage([], with: deflater) == [0x00])
        #expect(inflateMessage([0x00], with: inflater) == (.ok, []))
        let first = compressMessage(hello, with: deflater)
        #expect(compressMessage([], with: deflater) == [0x00])
        #expect(compressMessage([], with: deflater) == [0x00])
        #expect(inflateMessage(first, with: inflater) == (.ok, hello))
        #expect(inflateMessage([0x00], with: inflater) == (.ok, []))
        // The stream is intact: the next message still refers back to "Hello".
        #expect(compressMessage(hello, with: deflater) == [0xF2, 0x00, 0x11, 0x00, 0x00])
        #expect(inflateMessage([0xF2, 0x00, 0x11, 0x00, 0x00], with: inflater) == (.ok, hello))
        // A compressed message with no payload at all is read as empty.
        #expect(inflateMessage([UInt8](), with: inflater) == (.ok, []))
    }

    @Test("compress appends to the caller's buffer and inflate appends to its output")
    func appendsToBuffers() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        var payload: [UInt8] = [0xAA, 0xBB]
        hello.withUnsafeBytes { deflater.compress($0, into: &payload) }
        #expect(payload == [0xAA, 0xBB, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])

        let inflater = MessageInflater(parameters: DeflateParameters())
        var message = Array("say ".utf8)
        let outcome = payload.dropFirst(2).withUnsafeBytes { inflater.inflate($0, into: &message, limit: 100) }
        #expect(outcome == .ok)
        #expect(inflater.finishMessage(into: &message, limit: 100) == .ok)
        #expect(message == Array("say Hello".utf8))
    }
}

@Suite("permessage-deflate: round trips, splits, limits and hostile input")
struct PerMessageDeflateStreamTests {
    /// Messages of many sizes up to 1 MiB: text made of slices of a word soup
    /// (compressible, with matches near and far) and raw random bytes (incompressible).
    static let messages: [[UInt8]] = {
        var generator = SeededGenerator(state: 7692)
        let words = ["alpha", "beta", "gamma", "delta", " ", "\n", "{\"key\":", "42}", "é€𝄞"].map { Array($0.utf8) }
        var soup: [UInt8] = []
        while soup.count < 16_384 { soup += words.randomElement(using: &generator)! }
        let sizes = [0, 1, 2, 3, 5, 100, 1000, 4095, 4096, 32_768, 65_535, 65_537, 300_000, 1 << 20]
        return sizes.enumerated().map { index, size in
            if index % 2 == 0 {
                var message: [UInt8] = []
                message.reserveCapacity(size + 2048)
                while message.count < size {
                    let start = Int.random(in: 0..<soup.count - 2048, using: &generator)
                    message += soup[start..<(start + Int.random(in: 1...2048, using: &generator))]
                }
                return Array(message.prefix(size))
            }
            return randomBytes(count: size, using: &generator)
        }
    }()

    /// `count` random bytes, eight at a time.
    fileprivate static func randomBytes(count: Int, using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            for offset in stride(from: 0, to: count, by: 8) {
                let length = min(8, count - offset)
                withUnsafeBytes(of: generator.next()) { word in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: word[..<length]))
                }
            }
        }
        return bytes
    }

    static let configurations: [(noContextTakeover: Bool, windowBits: Int)] =
        [false, true].flatMap { flag in (9...15).map { (flag, $0) } }

    @Test("every message survives compression and decompression, for every window and takeover setting",
          arguments: configurations)
    func roundTrip(noContextTakeover: Bool, windowBits: Int) throws {
        var parameters = DeflateParameters()
        parameters.clientNoContextTakeover = noContextTakeover
        parameters.serverNoContextTakeover = noContextTakeover
        parameters.clientMaxWindowBits = windowBits
        parameters.serverMaxWindowBits = windowBits
        let deflater = try MessageDeflater(parameters: parameters)
        let inflater = MessageInflater(parameters: parameters)
        var payload: [UInt8] = []
        var message: [UInt8] = []
        // Twice through, so later messages refer back to earlier ones under takeover.
        for original in Self.messages + Self.messages {
            payload.removeAll(keepingCapacity: true)
            message.removeAll(keepingCapacity: true)
            original.withUnsafeBytes { deflater.compress($0, into: &payload) }
            #expect(payload.count < 4 || payload[(payload.count - 4)...] != [0x00, 0x00, 0xFF, 0xFF])
            let outcome = payload.withUnsafeBytes { inflater.inflate($0, into: &message, limit: 1 << 20) }
            #expect(outcome == .ok)
            #expect(inflater.finishMessage(into: &message, limit: 1 << 20) == .ok)
            let isSame = message == original  // outside #expect: a failure must not diff 1 MiB arrays
            #expect(isSame, "\(original.count) bytes, window \(windowBits), reset \(noContextTakeover)")
        }
    }

    @Test("client_max_window_bits bounds how far back the compressor looks")
    func windowBitsAreHonoured() throws {
        var generator = SeededGenerator(state: 15)
        let block = Self.randomBytes(count: 4096, using: &generator)
        var sizes: [Int: Int] = [:]
        for bits in [9, 15] {
            var parameters = DeflateParameters()
            parameters.clientMaxWindowBits = bits
            sizes[bits] = compressMessage(block + block, with: try MessageDeflater(parameters: parameters)).count
        }
        // A 32 KiB window finds the repeat 4 KiB back; a 512-byte window cannot.
        #expect(sizes[15]! < 4096 + 200)
        #expect(sizes[9]! > 8000)
    }

    @Test("an 8-bit client window is not compressed: zlib has no 8-bit raw deflate")
    func eightBitClientWindow() {
        var parameters = DeflateParameters()
        parameters.clientMaxWindowBits = 8
        #expect(!MessageDeflater.canCompress(with: parameters))
        #expect(throws: MessageDeflater.Failure.self) { try MessageDeflater(parameters: parameters) }
        parameters.clientMaxWindowBits = 9
        #expect(MessageDeflater.canCompress(with: parameters))
        // The server may still compress with 8 bits; the inflater reads any window.
        parameters.serverMaxWindowBits = 8
        #expect(inflateMessage([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], with: MessageInflater(parameters: parameters))
            == (.ok, hello))
    }

    @Test("inflating in two pieces split at every point equals inflating at once")
    func everySplitPoint() throws {
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let original = Array(Self.messages[6].prefix(700)) + Array(Self.messages[6].prefix(300))
        let payload = compressMessage(original, with: deflater)
        for split in 0...payload.count {
            let pieces = [Array(payload[..<split]), Array(payload[split...])]
            let result = inflateMessage(pieces, with: MessageInflater(parameters: DeflateParameters()))
            #expect(result == (.ok, original), "split at \(split)")
        }
        let examples: [[UInt8]] = [
            [0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00],
            [0xF2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xCA, 0xC9, 0xC9, 0x07, 0x00],
        ]
        for example in examples {
            for split in 0...example.count {
                let pieces = [Array(example[..<split]), Array(example[split...])]
                #expect(inflateMessage(pieces, with: MessageInflater(parameters: DeflateParameters())) == (.ok, hello))
            }
        }
    }

    @Test("inflating in many random pieces, with tight limits, equals inflating at once")
    func randomPieces() throws {
        var generator = SeededGenerator(state: 2024)
        let deflater = try MessageDeflater(parameters: DeflateParameters())
        let inflater = MessageInflater(parameters: DeflateParameters())
        for original in Self.messages where original.count <= 65_537 {
            let payload = compressMessage(original, with: deflater)
            var pieces: [[UInt8]] = []
            var offset = 0
            while offset < payload.count {
                let length = Int.random(in: 0...min(payload.count - offset, 97), using: &generator)
                pieces.append(Array(payload[offset..<(offset + length)]))
                offset += length
            }
            // The limit is exactly the message size: reaching it is not "too large".
            let result = inflateMessage(pieces, with: inflater, limit: original.count)
            let isSame = result.message == original  // outside #expect: a failure must not diff large arrays
            #expect(result.outcome == .ok)
            #expect(isSame, "\(original.count) bytes")
        }
    }

    @Test("a message of limit bytes passes; one byte more is too large")
    func exactLimit() throws {
        let original = Self.messages[8]
        let payload = compressMessage(original, with: try MessageDeflater(parameters: DeflateParameters()))
        let whole = inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters()), limit: original.count)
        let isSame = whole.message == original  // outside #expect: a failure must not diff large arrays
        #expect(whole.outcome == .ok)
        #expect(isSame)
        let cut = inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters()), limit: original.count - 1)
        #expect(cut.outcome == .tooLarge)
        #expect(cut.message.count <= original.count - 1)
    }

    @Test("a deflate bomb stops at the limit without allocating much beyond it")
    func deflateBomb() throws {
        let zeros = [UInt8](repeating: 0, count: 16 << 20)
        let bomb = compressMessage(zeros, with: try MessageDeflater(parameters: DeflateParameters()))
        #expect(bomb.count < 64 * 1024)
        // 700,000 is no power of two: plain doubling of the buffer would overshoot it.
        let cases = [1 << 20, 700_000].flatMap { limit in [bomb.count, 1000, 7].map { (limit, $0) } }
        for (limit, pieceSize) in cases {
            let inflater = MessageInflater(parameters: DeflateParameters())
            var output: [UInt8] = []
            var outcome = MessageInflater.InflateOutcome.ok
            var offset = 0
            while offset < bomb.count, outcome == .ok {
                let end = min(offset + pieceSize, bomb.count)
                outcome = bomb[offset..<end].withUnsafeBytes { inflater.inflate($0, into: &output, limit: limit) }
                offset = end
            }
            #expect(outcome == .tooLarge)
            #expect(output.count <= limit)
            #expect(output.capacity <= limit + 64 * 1024)
            let isAllZeros = output == [UInt8](repeating: 0, count: output.count)
            #expect(isAllZeros)
            // The inflater refuses to go on once the message was too large.
            #expect(isCorrupt(bomb.withUnsafeBytes { inflater.inflate($0, into: &output, limit: limit) }))
            #expect(isCorrupt(inflater.finishMessage(into: &output, limit: limit)))
        }
    }

    @Test("invalid compressed data is corrupt", arguments: [
        [0xFF, 0xFF, 0xFF, 0xFF],            // a dynamic block with impossible code counts
        [0x06],                              // block type 3, which is reserved
        [0x00, 0x05, 0x00, 0x00, 0x00],      // stored block whose NLEN is not ~LEN
        [0xF2, 0x00, 0x11, 0x00, 0x00],      // a back-reference before the start of the stream
        [0xF2, 0x48, 0xCD],                  // ends inside a block
    ] as [[UInt8]])
    func corruptInput(payload: [UInt8]) {
        let result = inflateMessage(payload, with: MessageInflater(parameters: DeflateParameters()), limit: 1000)
        #expect(isCorrupt(result.outcome), "\(payload)")
    }

    @Test("random bytes and mutated payloads never crash the inflater")
    func fuzz() throws {
        var generator = SeededGenerator(state: 0xDEF1A7E)
        let valid = compressMessage(Array(Self.messages[6].prefix(2000)), with: try MessageDeflater(parameters: DeflateParameters()))
        var corruptCount = 0
        for iteration in 0..<3000 {
            var payload: [UInt8]
            if iteration % 2 == 0 {
                payload = (0..<Int.random(in: 0...48, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                payload = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    payload[Int.random(in: 0..<payload.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            var pieces: [[UInt8]] = []
            var offset = 0
            while offset < payload.count {
                let length = Int.random(in: 1...(payload.count - offset), using: &generator)
                pieces.append(Array(payload[offset..<(offset + length)]))
                offset += length
            }
            let limit = Int.random(in: 0...4096, using: &generator)
            let result = inflateMessage(pieces, with: MessageInflater(parameters: DeflateParameters()), limit: limit)
            #expect(result.message.count <= limit)
            if isCorrupt(result.outcome) { corruptCount += 1 }
        }
        // Most random input is rejected; the loop did exercise the failure paths.
        #expect(corruptCount > 1000)
    }
}

@Suite("permessage-deflate: negotiating the server's response (RFC 7692 section 7.1)")
struct DeflateParametersTests {
    @Test("the client's default offer is a 12-bit client window; nil leaves the window to the server")
    func offer() {
        #expect(DeflateOffer().headerValue == "permessage-deflate; client_max_window_bits")
        #expect(DeflateOffer(WebSocketCompression()).headerValue == "permessage-deflate; client_max_window_bits=12")
        var compression = WebSocketCompression()
        compression.clientMaxWindowBits = nil
        #expect(DeflateOffer(compression).headerValue == "permessage-deflate; client_max_window_bits")
    }

    @Test("an offer carries every parameter the configuration sets")
    func fullOffer() {
        var compression = WebSocketCompression()
        compression.clientMaxWindowBits = 9
        compression.serverMaxWindowBits = 10
        compression.clientNoContextTakeover = true
        compression.serverNoContextTakeover = true
        #expect(DeflateOffer(compression).headerValue
            == "permessage-deflate; client_max_window_bits=9; server_max_window_bits=10; client_no_context_takeover; server_no_context_takeover")
        #expect(compression.description == DeflateOffer(compression).headerValue)
        #expect(WebSocketCompression.disabled.description == "off")
        let off: WebSocketCompression = false
        #expect(!off.isEnabled)
    }

    /// The offer and answer rules of RFC 7692 section 7.1 for the client.
    static let settled: [(offer: DeflateOffer, answer: String, result: Result<[Int], DeflateParameters.Failure>)] = {
        func offer(client: Int? = nil, server: Int? = nil, clientReset: Bool = false, serverReset: Bool = false) -> DeflateOffer {
            var offer = DeflateOffer()
            offer.clientMaxWindowBits = client
            offer.serverMaxWindowBits = server
            offer.clientNoContextTakeover = clientReset
            offer.serverNoContextTakeover = serverReset
            return offer
        }
        // result: [client bits, server bits, client reset, server reset] (resets as 0/1)
        return [
            (offer(), "permessage-deflate", .success([15, 15, 0, 0])),
            (offer(client: 9), "permessage-deflate", .success([9, 15, 0, 0])),
            (offer(client: 9), "permessage-deflate; client_max_window_bits=9", .success([9, 15, 0, 0])),
            (offer(client: 10), "permessage-deflate; client_max_window_bits=9", .success([9, 15, 0, 0])),
            // Larger than offered (Autobahn 13.4 and 13.6 answer 15 to 9): compress with the 9 offered.
            (offer(client: 9), "permessage-deflate; client_max_window_bits=15", .success([9, 15, 0, 0])),
            (offer(server: 10), "permessage-deflate; server_max_window_bits=10", .success([15, 10, 0, 0])),
            (offer(server: 10), "permessage-deflate; server_max_window_bits=9", .success([15, 9, 0, 0])),
            (offer(server: 10), "permessage-deflate", .success([15, 15, 0, 0])),
            (offer(server: 10), "permessage-deflate; server_max_window_bits=11", .success([15, 11, 0, 0])),
            (offer(), "permessage-deflate; client_max_window_bits=10", .success([10, 15, 0, 0])),
            (offer(), "permessage-deflate; unknown", .failure(.unknownParameter("unknown"))),
            (offer(), "permessage-deflate; server_max_window_bits=12", .success([15, 12, 0, 0])),
            (offer(serverReset: true), "permessage-deflate", .success([15, 15, 0, 0])),
            (offer(serverReset: true), "permessage-deflate; server_no_context_takeover", .success([15, 15, 0, 1])),
            (offer(clientReset: true), "permessage-deflate", .success([15, 15, 1, 0])),
            (offer(), "permessage-deflate; client_no_context_takeover", .success([15, 15, 1, 0])),
            (offer(), "permessage-deflate; server_no_context_takeover", .success([15, 15, 0, 1])),
        ]
    }()

    @Test("the server's answer is held to the offer", arguments: settled)
    func answerAgainstOffer(offer: DeflateOffer, answer: String, result: Result<[Int], DeflateParameters.Failure>) {
        let outcome = Result { () throws(DeflateParameters.Failure) -> [Int] in
            let settled = try DeflateParameters(negotiating: answer, offer: offer)
            return [settled.clientMaxWindowBits, settled.serverMaxWindowBits,
                    settled.clientNoContextTakeover ? 1 : 0, settled.serverNoContextTakeover ? 1 : 0]
        }
        #expect(outcome == result)
    }

    static let accepted: [(String, DeflateParameters)] = {
        func parameters(_ client: Bool, _ server: Bool, _ clientBits: Int, _ serverBits: Int) -> DeflateParameters {
            var parameters = DeflateParameters()
            parameters.clientNoContextTakeover = client
            parameters.serverNoContextTakeover = server
            parameters.clientMaxWindowBits = clientBits
            parameters.serverMaxWindowBits = serverBits
            return parameters
        }
        return [
            ("permessage-deflate", parameters(false, false, 15, 15)),
            ("permessage-deflate; server_no_context_takeover", parameters(false, true, 15, 15)),
            ("permessage-deflate; client_no_context_takeover", parameters(true, false, 15, 15)),
            ("permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=9",
             parameters(true, true, 9, 10)),
            ("permessage-deflate;client_max_window_bits=\"12\"", parameters(false, false, 12, 15)),
            ("  permessage-deflate ;\tserver_max_window_bits = \"8\" ; client_max_window_bits=15 , ", parameters(false, false, 15, 8)),
            ("Permessage-Deflate; Server_No_Context_Takeover", parameters(false, true, 15, 15)),
            ("permessage-deflate; server_max_window_bits=\"1\\5\"", parameters(false, false, 15, 15)),
            (", permessage-deflate; client_max_window_bits=8", parameters(false, false, 8, 15)),
        ]
    }()

    @Test("accepted responses", arguments: accepted)
    func acceptedResponse(header: String, expected: DeflateParameters) throws {
        let parsed = try DeflateParameters(negotiating: header)
        #expect(parsed.clientNoContextTakeover == expected.clientNoContextTakeover)
        #expect(parsed.serverNoContextTakeover == expected.serverNoContextTakeover)
        #expect(parsed.clientMaxWindowBits == expected.clientMaxWindowBits)
        #expect(parsed.serverMaxWindowBits == expected.serverMaxWindowBits)
    }

    static let rejected: [(String, DeflateParameters.Failure)] = [
        ("permessage-deflate; x", .unknownParameter("x")),
        ("permessage-deflate; server_no_context_takeover; server_no_context_takeover",
         .duplicateParameter("server_no_context_takeover")),
        ("permessage-deflate; client_max_window_bits=9; Client_Max_Window_Bits=10", .duplicateParameter("Client_Max_Window_Bits")),
        ("permessage-deflate; server_max_window_bits=7", .invalidValue(parameter: "server_max_window_bits", value: "7")),
        ("permessage-deflate; server_max_window_bits=16", .invalidValue(parameter: "server_max_window_bits", value: "16")),
        ("permessage-deflate; client_max_window_bits=08", .invalidValue(parameter: "client_max_window_bits", value: "08")),
        ("permessage-deflate; client_max_window_bits=\"\"", .invalidValue(parameter: "client_max_window_bits", value: "")),
        ("permessage-deflate; client_max_window_bits=1.0", .invalidValue(parameter: "client_max_window_bits", value: "1.0")),
        ("permessage-deflate; server_max_window_bits=+9", .invalidValue(parameter: "server_max_window_bits", value: "+9")),
        ("permessage-deflate; client_no_context_takeover=1", .unexpectedValue(parameter: "client_no_context_takeover")),
        ("permessage-deflate; server_no_context_takeover=\"\"", .unexpectedValue(parameter: "server_no_context_takeover")),
        ("permessage-deflate, permessage-deflate", .repeatedExtension),
        ("permessage-deflate; server_max_window_bits", .missingValue(parameter: "server_max_window_bits")),
        ("permessage-deflate; client_max_window_bits", .missingValue(parameter: "client_max_window_bits")),
        ("", .missingExtension),
        (" , ", .missingExtension),
        ("x-webkit-deflate-frame", .unexpectedExtension("x-webkit-deflate-frame")),
        ("permessage-deflate; ", .malformed("parameter name missing at the end")),
        ("permessage-deflate x", .malformed("unexpected character at offset 19")),
        ("permessage-deflate; a=\"open", .malformed("unterminated quoted string")),
        ("permessage-deflate; server_max_window_bits=", .malformed("value of 'server_max_window_bits' missing at the end")),
        ("permessage-deflate; =9", .malformed("parameter name expected at offset 20")),
    ]

    @Test("rejected responses", arguments: rejected)
    func rejectedResponse(header: String, expected: DeflateParameters.Failure) {
        #expect(throws: expected) { try DeflateParameters(negotiating: header) }
    }

    @Test("failures describe themselves")
    func descriptions() {
        #expect(DeflateParameters.Failure.unknownParameter("x").description == "permessage-deflate: unknown parameter 'x'")
        #expect(DeflateParameters.Failure.invalidValue(parameter: "server_max_window_bits", value: "7").description
            == "permessage-deflate: invalid value '7' for 'server_max_window_bits' (expected 8 to 15)")
    }

    @Test("random headers never crash the parser")
    func fuzz() {
        var generator = SeededGenerator(state: 7)
        let pieces = ["permessage-deflate", ";", ",", "=", "\"", "\\", " ", "\t", "server_max_window_bits",
                      "client_no_context_takeover", "1", "5", "0", "x", "\u{1}", "é"]
        for _ in 0..<3000 {
            let header = (0..<Int.random(in: 0...8, using: &generator))
                .map { _ in pieces.randomElement(using: &generator)! }.joined()
            if let parameters = try? DeflateParameters(negotiating: header) {
                #expect((8...15).contains(parameters.clientMaxWindowBits))
                #expect((8...15).contains(parameters.serverMaxWindowBits))
            }
        }
    }
}
