import FoundationEssentials
@testable import WebSocketStreams
import WebSocketCore

/// The server end of one simulated connection: our own server-side codec. It answers the
/// upgrade as told, reads the client's frames checking every rule RFC 6455 sets for a client
/// (and records what it delivered), answers pings and closes, and sends what the schedule
/// says: messages (fragmented, deflated), pings, closes, and frames that break the rules.
struct SimulatedPeer {
    enum Stage { case awaitingRequest, open, refused }

    var stage = Stage.awaitingRequest
    let answer: SimulationEvent.Answer
    /// Bytes for the client, in order (the connection moves them onto the wire).
    var output: [UInt8] = []
    /// The peer wants its TCP closed (a FIN after `output`).
    var wantsFIN = false
    /// permessage-deflate was agreed.
    private(set) var deflates = false
    private var inflater: MessageInflater?
    private var deflater: MessageDeflater?
    private var input: [UInt8] = []
    private var partial: (opcode: UInt8, compressed: Bool, payload: [UInt8])?
    /// The client's close frame, once read (its code; `nil` for an empty one).
    private(set) var clientClose: UInt16??
    /// The peer's own close frame, once sent (its code; `nil` for an empty one).
    private(set) var sentClose: UInt16??
    /// The close code the client's close frame must carry: set when the client answers the
    /// peer's close (RFC 6455 5.5.1: the same code).
    var expectedEcho: UInt16??
    /// How many client close frames were checked against ``expectedEcho``.
    private(set) var echoChecks = 0
    /// The peer broke a rule (so the client may fail the connection with 1002, 1007, 1009).
    private(set) var brokeRule = false
    /// Where the first frame breaking a rule ends in the peer's output stream.
    private(set) var brokenRuleEnd: Int?
    /// Bytes the peer has written in all (its output stream's length).
    private(set) var written = 0
    /// What the client did wrong, if anything.
    private(set) var violation: String?
    /// Message ids the peer received whole, in order.
    private(set) var delivered: [Int] = []
    let maxMessageSize: Int
    let maxFragments: Int

    init(answer: SimulationEvent.Answer, maxMessageSize: Int, maxFragments: Int) {
        self.answer = answer
        self.maxMessageSize = maxMessageSize
        self.maxFragments = maxFragments
    }

    var isOpen: Bool { stage == .open }
    /// Whether the peer may still send frames.
    var maySend: Bool { stage == .open && sentClose == nil && !wantsFIN }

    // MARK: - Writing

    private mutating func write(_ bytes: [UInt8]) {
        output += bytes
        written += bytes.count
    }

    private mutating func writeFrame(_ opcode: UInt8, fin: Bool = true, rsv1: Bool = false, _ payload: [UInt8]) {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode]
        switch payload.count {
        case ..<126: frame.append(UInt8(payload.count))
        case ..<65536: frame += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        write(frame + payload)
    }

    /// A message of `size` bytes in `fragments` frames; text has two-byte characters that
    /// fragments may cut in half.
    mutating func send(size: Int, fragments: Int, binary: Bool, compress: Bool) {
        guard maySend else { return }
        var payload = binary ? (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) } : Array(String(repeating: "é", count: size / 2).utf8)
        if !binary, size % 2 == 1 { payload.append(0x21) }
        if payload.count > maxMessageSize || fragments > maxFragments { brokeRule = true }
        var rsv1 = false
        if compress, deflates, let deflater {
            var compressed: [UInt8] = []
            payload.withUnsafeBytes { deflater.compress($0, into: &compressed) }
            payload = compressed
            rsv1 = true
        }
        let piece = max(1, (payload.count + fragments - 1) / fragments)
        for index in 0..<fragments {
            let start = min(payload.count, index * piece)
            let end = index == fragments - 1 ? payload.count : min(payload.count, start + piece)
            writeFrame(index == 0 ? (binary ? 0x2 : 0x1) : 0x0, fin: index == fragments - 1, rsv1: rsv1 && index == 0, Array(payload[start..<end]))
        }
        if brokeRule, brokenRuleEnd == nil { brokenRuleEnd = written }
    }

    mutating func ping() {
        guard maySend else { return }
        writeFrame(0x9, Array("sim".utf8))
    }

    mutating func close(code: UInt16?) {
        guard maySend else { return }
        sentClose = .some(code)
        writeFrame(0x8, code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF), 0x62, 0x79, 0x65] } ?? [])
    }

    mutating func misbehave(_ misbehaviour: SimulationEvent.Misbehaviour) {
        guard maySend else { return }
        brokeRule = true
        switch misbehaviour {
        case .continuationWithoutStart: writeFrame(0x0, [0x78])
        case .maskedFrame: write([0x81, 0x81, 1, 2, 3, 4, 0x79])
        case .reservedBits: write([0xA1, 0x01, 0x78])
        case .controlTooLong: writeFrame(0x9, [UInt8](repeating: 0x70, count: 126))
        case .fragmentedControl: writeFrame(0x9, fin: false, [])
        case .invalidUTF8AcrossFragments:
            writeFrame(0x1, fin: false, [0x61, 0xE2])
            writeFrame(0x0, [0x28, 0xA1])
        case .invalidCloseCode:
            writeFrame(0x8, [0x03, 0xEC])  // 1004
            sentClose = .some(1004)
        case .reservedOpcode: writeFrame(0x3, [])
        case .newMessageInsideFragmented:
            writeFrame(0x1, fin: false, [0x61])
            writeFrame(0x1, [0x62])
        case .tooManyFragments:
            for index in 0...maxFragments { writeFrame(index == 0 ? 0x2 : 0x0, fin: index == maxFragments, [0x7A]) }
        case .tooBig: writeFrame(0x2, [UInt8](repeating: 0x7A, count: maxMessageSize + 1))
        }
        if brokenRuleEnd == nil { brokenRuleEnd = written }
    }

    // MARK: - Reading

    /// Bytes from the client reached the peer (its TCP acknowledged them).
    mutating func read(_ bytes: [UInt8]) {
        input += bytes
        if stage == .awaitingRequest { readRequest() }
        if stage == .open { readFrames() }
    }

    private mutating func readRequest() {
        let end = Array("\r\n\r\n".utf8)
        guard input.count >= 4, let index = (0...(input.count - 4)).first(where: { Array(input[$0..<$0 + 4]) == end }) else { return }
        let head = String(decoding: input[..<(index + 4)], as: UTF8.self)
        input.removeFirst(index + 4)
        let key = head.split(separator: "\r\n").first { $0.hasPrefix("Sec-WebSocket-Key: ") }.map { String($0.dropFirst(19)) } ?? ""
        let offersDeflate = head.contains("Sec-WebSocket-Extensions: permessage-deflate")
        let accept = HandshakeRequest.acceptValue(forKey: key, sha1: { Crypto.sha1($0) })
        switch answer {
        case .accept, .acceptWithoutDeflate, .badAccept:
            deflates = offersDeflate && answer == .accept
            var response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            response += "Sec-WebSocket-Accept: \(answer == .badAccept ? "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" : accept)\r\n"
            if deflates { response += "Sec-WebSocket-Extensions: permessage-deflate\r\n" }
            write(Array((response + "\r\n").utf8))
            if answer == .badAccept {
                stage = .refused
                return
            }
            if deflates {
                inflater = MessageInflater(parameters: DeflateParameters())
                deflater = try? MessageDeflater(parameters: DeflateParameters())
            }
            stage = .open
        case .reject401:
            write(Array("HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope".utf8))
            stage = .refused
            wantsFIN = true
        case .reject503:
            write(Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".utf8))
            stage = .refused
            wantsFIN = true
        case .dropBeforeAnswer:
            stage = .refused
            wantsFIN = true
        }
    }

    private mutating func fail(_ reason: String) {
        if violation == nil { violation = reason }
        input = []
    }

    private mutating func readFrames() {
        while violation == nil, input.count >= 2 {
            let first = input[0], second = input[1]
            let opcode = first & 0x0F
            let fin = first & 0x80 != 0
            let rsv1 = first & 0x40 != 0
            let isControl = opcode >= 0x8
            if clientClose != nil { return fail("a frame after the client's close frame") }
            if second & 0x80 == 0 { return fail("an unmasked client frame") }
            if first & 0x30 != 0 { return fail("RSV2 or RSV3 set") }
            if ![0x0, 0x1, 0x2, 0x8, 0x9, 0xA].contains(opcode) { return fail("the reserved opcode \(opcode)") }
            if isControl, !fin { return fail("a fragmented control frame") }
            if isControl, second & 0x7F > 125 { return fail("a control frame over 125 bytes") }
            if rsv1, !(deflates && (opcode == 0x1 || opcode == 0x2)) { return fail("RSV1 without deflate or on a continuation/control frame") }
            if opcode == 0x0, partial == nil { return fail("a continuation frame with no message to continue") }
            if opcode == 0x1 || opcode == 0x2, partial != nil { return fail("a new message inside a fragmented one") }
            var length = Int(second & 0x7F)
            var headerLength = 2
            if length == 126 {
                guard input.count >= 4 else { return }
                length = Int(input[2]) << 8 | Int(input[3])
                headerLength = 4
            } else if length == 127 {
                guard input.count >= 10 else { return }
                length = (2..<10).reduce(0) { $0 << 8 | Int(input[$1]) }
                headerLength = 10
            }
            guard input.count >= headerLength + 4 + length else { return }
            let key = Array(input[headerLength..<headerLength + 4])
            let payload = (0..<length).map { input[headerLength + 4 + $0] ^ key[$0 & 3] }
            input.removeFirst(headerLength + 4 + length)
            switch opcode {
            case 0x9:
                if sentClose == nil, !wantsFIN { writeFrame(0xA, payload) }
            case 0xA:
                // The peer's pings carry "sim"; a pong must carry the ping's data (RFC 6455 5.5.3).
                if payload != Array("sim".utf8) { return fail("a pong whose data is not the ping's") }
            case 0x8:
                readClose(payload)
            default:
                if opcode != 0x0 { partial = (opcode, rsv1, []) }
                partial?.payload += payload
                if fin, let message = partial {
                    partial = nil
                    finishMessage(message)
                }
            }
        }
    }

    private mutating func readClose(_ payload: [UInt8]) {
        if payload.count == 1 { return fail("a close frame with a 1-byte payload") }
        let code: UInt16? = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
        if let code, !WebSocketCloseCode(rawValue: code).isValidInCloseFrame { return fail("the invalid close code \(code)") }
        if payload.count > 2, String(validating: payload[2...], as: UTF8.self) == nil { return fail("a close reason that is not UTF-8") }
        if let code, [1002, 1007, 1009].contains(code), !brokeRule {
            return fail("the client failed the connection with \(code), but the peer broke no rule")
        }
        if expectedEcho != nil { echoChecks += 1 }
        if let expected = expectedEcho, expected != code {
            return fail("the client answered close code \(expected.map(String.init) ?? "none") with \(code.map(String.init) ?? "none") (RFC 6455 5.5.1: the same code)")
        }
        clientClose = .some(code)
        if sentClose == nil, !wantsFIN {
            sentClose = .some(code)
            writeFrame(0x8, code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } ?? [])
        }
        wantsFIN = true  // the server ends TCP first (RFC 6455 7.1.1)
    }

    private mutating func finishMessage(_ message: (opcode: UInt8, compressed: Bool, payload: [UInt8])) {
        var payload = message.payload
        if message.compressed {
            guard let inflater else { return fail("a compressed message without deflate") }
            var inflated: [UInt8] = []
            let outcome = payload.withUnsafeBytes { inflater.inflate($0, into: &inflated, limit: 1 << 24) }
            let finished = inflater.finishMessage(into: &inflated, limit: 1 << 24)
            guard case .ok = outcome, case .ok = finished else { return fail("a compressed message that does not inflate") }
            payload = inflated
        }
        if message.opcode == 0x1, String(validating: payload, as: UTF8.self) == nil { return fail("a text message that is not UTF-8") }
        guard payload.first == 0x23, let semicolon = payload.firstIndex(of: 0x3B),
              let id = Int(String(decoding: payload[1..<semicolon], as: UTF8.self))
        else { return fail("a message the user never sent") }
        delivered.append(id)
    }
}
