/// Cuts a byte stream into lines, for piped standard input.
///
/// A line ends at `\n`; a `\r` before it is dropped too (files from Windows). The bytes
/// after the last newline form a final line when the input ends.
struct LineSplitter: Sendable {
    private var partial: [UInt8] = []

    /// The lines completed by `bytes`, without their line endings.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if partial.last == UInt8(ascii: "\r") { partial.removeLast() }
                lines.append(partial)
                partial = []
            } else {
                partial.append(byte)
            }
        }
        return lines
    }

    /// The unterminated last line, if the input ended without a newline.
    mutating func finish() -> [UInt8]? {
        defer { partial = [] }
        return partial.isEmpty ? nil : partial
    }
}
