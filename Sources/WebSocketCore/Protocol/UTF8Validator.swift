/// Incremental UTF-8 validation (RFC 3629) across the chunks of one text message.
///
/// RFC 6455 asks endpoints to fail a connection as soon as text stops being valid UTF-8,
/// not only at the end of the message, so each received chunk is checked as it arrives
/// and a code point may span chunks. Overlong forms, surrogates and values above
/// U+10FFFF are rejected.
package struct UTF8Validator {
    package init() {}

    /// Continuation bytes still expected for the current code point.
    private var pending = 0
    /// The allowed range of the next continuation byte (narrower right after some lead bytes).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether the bytes seen so far end on a code point boundary.
    package var isComplete: Bool { pending == 0 }

    /// Checks `bytes`; returns `false` at the first invalid byte.
    package mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if pending == 0 {
                // Skip ASCII eight bytes at a time.
                while index + 8 <= count,
                      bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                guard index < count else { break }
            }
            let byte = bytes[index]
            index += 1
            if pending == 0 {
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: (pending, lower, upper) = (1, 0x80, 0xBF)
                case 0xE0: (pending, lower, upper) = (2, 0xA0, 0xBF)
                case 0xE1...0xEC, 0xEE, 0xEF: (pending, lower, upper) = (2, 0x80, 0xBF)
                case 0xED: (pending, lower, upper) = (2, 0x80, 0x9F)
                case 0xF0: (pending, lower, upper) = (3, 0x90, 0xBF)
                case 0xF1...0xF3: (pending, lower, upper) = (3, 0x80, 0xBF)
                case 0xF4: (pending, lower, upper) = (3, 0x80, 0x8F)
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else { return false }
                pending -= 1
                (lower, upper) = (0x80, 0xBF)
            }
        }
        return true
    }
}
