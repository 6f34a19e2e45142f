import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

@Suite("Incremental UTF-8 validation")
struct UTF8ValidatorTests {
    static let samples: [[UInt8]] = [
        Array("plain ascii text that is longer than eight bytes".utf8),
        Array("héllo wörld €uro 𝄞 clef".utf8),
        [0xC0, 0x80],                     // overlong NUL
        [0xED, 0xA0, 0x80],               // surrogate U+D800
        [0xF4, 0x90, 0x80, 0x80],         // above U+10FFFF
        [0xE2, 0x82],                     // truncated €
        [0x80],                           // lone continuation
        [0xF0, 0x9F, 0x98, 0x80, 0x41],   // emoji then A
        [0xFF],
    ]

    @Test("agrees with the standard library for every split point", arguments: samples)
    func agreesWithStandardLibrary(bytes: [UInt8]) {
        let expected = String(validating: bytes, as: UTF8.self) != nil
        for split in 0...bytes.count {
            var validator = UTF8Validator()
            let first = bytes[..<split].withUnsafeBytes { validator.validate($0) }
            let second = first && bytes[split...].withUnsafeBytes { validator.validate($0) }
            let valid = second && validator.isComplete
            #expect(valid == expected, "split at \(split) of \(bytes)")
        }
    }

    @Test("fails fast: the first bad byte is reported before the message ends")
    func failsFast() {
        var validator = UTF8Validator()
        let bad: [UInt8] = [0x68, 0xF0, 0x9F, 0x28]
        #expect(!bad.withUnsafeBytes { validator.validate($0) })
    }
}
