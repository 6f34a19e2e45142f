/// How a `/hostile/<kind>` route misbehaves, byte by byte, after (or instead of) a valid
/// `101 Switching Protocols`.
///
/// The bytes are written raw on the socket (over TLS, raw inside TLS records), so the
/// client under test meets exactly what a broken or malicious server would send; what the
/// client answers (its close frame) is recorded like any other connection's. The server
/// answers the client's pings, and its close frame with a close frame (unless the route
/// sent one), then ends the connection.
///
/// | Kind | After the 101 |
/// |---|---|
/// | `garbage?seed=S&count=N` | N random bytes |
/// | `reserved-bits` | a text frame with RSV2 set |
/// | `unknown-opcode` | a frame with opcode 3 |
/// | `masked` | a text frame with the mask bit set (servers must not mask) |
/// | `fragmented-control` | a ping without FIN |
/// | `huge-length` | a binary frame declaring 2^63 bytes |
/// | `bad-close-code?code=C` | a close frame with code C (default 1005, which may not be sent) |
/// | `long-close-reason` | a close frame with a 200-byte reason (control frames hold 125) |
/// | `bad-utf8-fragments` | a text message whose invalid UTF-8 spans two fragments |
/// | `ping-flood?count=N` | N pings (default 10,000), then a close with 1000 |
/// | `slowloris?ms=MS` | the 101 itself, one byte every MS milliseconds (default 1000) |
/// | `fuzz?seed=S&count=N` | N seeded random frames, valid and not, then TCP drops |
public enum HostileBehaviour: Sendable, Equatable {
    case garbage(seed: UInt64, count: Int)
    case reservedBits
    case unknownOpcode
    case masked
    case fragmentedControl
    case hugeLength
    case badCloseCode(UInt16)
    case longCloseReason
    case badUTF8Fragments
    case pingFlood(count: Int)
    case slowloris(milliseconds: Int)
    case fuzz(seed: UInt64, count: Int)

    /// The behaviour named by the last path component, e.g. `garbage`; nil for an unknown kind.
    init?(kind: String, query: [String: String]) {
        func int(_ name: String, _ fallback: Int) -> Int { query[name].flatMap { Int($0) } ?? fallback }
        let seed = query["seed"].flatMap { UInt64($0) } ?? 1
        switch kind {
        case "garbage": self = .garbage(seed: seed, count: max(1, int("count", 256)))
        case "reserved-bits": self = .reservedBits
        case "unknown-opcode": self = .unknownOpcode
        case "masked": self = .masked
        case "fragmented-control": self = .fragmentedControl
        case "huge-length": self = .hugeLength
        case "bad-close-code": self = .badCloseCode(UInt16(clamping: int("code", 1005)))
        case "long-close-reason": self = .longCloseReason
        case "bad-utf8-fragments": self = .badUTF8Fragments
        case "ping-flood": self = .pingFlood(count: max(1, int("count", 10_000)))
        case "slowloris": self = .slowloris(milliseconds: max(1, int("ms", 1000)))
        case "fuzz": self = .fuzz(seed: seed, count: max(1, int("count", 50)))
        default: return nil
        }
    }

    /// The bytes sent right after the 101 (empty for `slowloris`, which trickles the 101).
    public var bytesAfterHandshake: [UInt8] {
        switch self {
        case .garbage(let seed, let count):
            var random = SplitMix64(seed: seed)
            return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        case .reservedBits:
            return [0x80 | 0x20 | 0x01, 0x02] + Array("hi".utf8)
        case .unknownOpcode:
            return [0x80 | 0x03, 0x02] + Array("hi".utf8)
        case .masked:
            let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
            let payload = Array("hi".utf8).enumerated().map { $1 ^ mask[$0 % 4] }
            return [0x81, 0x80 | 0x02] + mask + payload
        case .fragmentedControl:
            return [0x09, 0x02] + Array("hi".utf8)
        case .hugeLength:
            return [0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0x61, count: 16)
        case .badCloseCode(let code):
            return [0x88, 0x02, UInt8(code >> 8), UInt8(code & 0xFF)]
        case .longCloseReason:
            let reason = [UInt8](repeating: UInt8(ascii: "r"), count: 200)
            return [0x88, 0x7E, 0x00, UInt8(2 + reason.count), 0x03, 0xE8] + reason
        case .badUTF8Fragments:
            // "h", then a 2-byte lead (C3) ending the first fragment; "(" continues it: invalid.
            return [0x01, 0x02, 0x68, 0xC3] + [0x80, 0x01, 0x28]
        case .pingFlood(let count):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count * 6 + 12)
            for index in 0..<count {
                bytes += [0x89, 0x04, UInt8(truncatingIfNeeded: index >> 24), UInt8(truncatingIfNeeded: index >> 16),
                          UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)]
            }
            return bytes + [0x88, 0x0C, 0x03, 0xE8] + Array("flood over".utf8)
        case .slowloris:
            return []
        case .fuzz(let seed, let count):
            return Self.fuzzFrames(seed: seed, count: count)
        }
    }

    /// Whether the server drops TCP shortly after writing (the client may be waiting for
    /// bytes a random frame declared but never sent).
    var dropsAfterWriting: Bool {
        switch self {
        case .fuzz, .garbage, .hugeLength: true
        default: false
        }
    }

    /// Whether ``bytesAfterHandshake`` ends with a close frame, or may hold one (random
    /// bytes): the client's close is then its answer, not to be answered again.
    var sendsClose: Bool {
        switch self {
        case .badCloseCode, .longCloseReason, .pingFlood, .fuzz, .garbage: true
        default: false
        }
    }

    /// `count` random frames: mostly well-formed text, binary, ping, pong, close and
    /// continuation frames, mixed with reserved bits, unknown opcodes, masks, missing FINs,
    /// invalid UTF-8, oversized control frames and lengths that do not match the payload.
    static func fuzzFrames(seed: UInt64, count: Int) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        let opcodes: [UInt8] = [0x0, 0x1, 0x2, 0x1, 0x2, 0x8, 0x9, 0xA, 0x3, 0x7, 0xB, 0xF]
        for _ in 0..<count {
            let roll = random.next()
            let fin: UInt8 = roll % 5 == 0 ? 0 : 0x80
            let reserved: UInt8 = roll % 17 == 0 ? UInt8(truncatingIfNeeded: (roll >> 8) & 0x70) : 0
            let opcode = opcodes[Int((roll >> 16) % UInt64(opcodes.count))]
            let masked = (roll >> 24) % 19 == 0
            let payloadLength = Int((roll >> 32) % 300)
            var payload = (0..<payloadLength).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if opcode == 0x1, (roll >> 40) % 3 != 0 {
                payload = Array(String(repeating: "é", count: payloadLength / 2).utf8)
            }
            bytes.append(fin | reserved | opcode)
            let lengthMode = (roll >> 48) % 23
            if lengthMode == 0 {
                bytes.append((masked ? 0x80 : 0) | 127)
                bytes += withUnsafeBytes(of: (random.next() >> 1).bigEndian) { Array($0) }
            } else if payload.count >= 126 || lengthMode == 1 {
                bytes.append((masked ? 0x80 : 0) | 126)
                let declared = lengthMode == 1 ? UInt16(truncatingIfNeeded: random.next()) : UInt16(payload.count)
                bytes += [UInt8(declared >> 8), UInt8(declared & 0xFF)]
            } else {
                bytes.append((masked ? 0x80 : 0) | UInt8(payload.count))
            }
            if masked { bytes += [0x01, 0x02, 0x03, 0x04] }
            bytes += payload
        }
        return bytes
    }
}

/// A small, fast, seeded generator (SplitMix64), so hostile byte streams (and the
/// package's randomized tests) are reproducible.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
