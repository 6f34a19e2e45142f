/// A key the line editor understands.
enum Key: Sendable, Equatable {
    case character(Character)
    case enter
    case backspace
    case delete
    case left, right, home, end, up, down
    /// Ctrl-U: erase the whole line.
    case eraseLine
    /// Ctrl-K: erase from the cursor to the end.
    case eraseToEnd
    /// Ctrl-W: erase the word before the cursor.
    case eraseWord
    /// Ctrl-D: end of input on an empty line, else delete.
    case endOfInput
    /// Ctrl-C.
    case interrupt
    /// Ctrl-L: draw the line again.
    case redraw
}

/// Turns the bytes a terminal in raw mode sends into ``Key``s.
///
/// Handles UTF-8 characters, control keys, and the CSI (`ESC [`) and SS3 (`ESC O`)
/// sequences of arrow, Home, End and Delete keys. Sequences split across reads are kept
/// until the rest arrives; unknown sequences and control bytes are dropped.
struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []
    private var lastWasCarriageReturn = false

    /// The keys completed by `bytes`.
    mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var index = 0
        decoding: while index < pending.count {
            let byte = pending[index]
            if byte == 0x0A, lastWasCarriageReturn {
                lastWasCarriageReturn = false
                index += 1
                continue
            }
            lastWasCarriageReturn = byte == 0x0D
            switch byte {
            case 0x1B:
                guard let (key, length) = escapeSequence(at: index) else { break decoding }
                if let key { keys.append(key) }
                index += length
            case 0x20..<0x7F:
                keys.append(.character(Character(Unicode.Scalar(byte))))
                index += 1
            case 0x80...:
                let length = Self.utf8Length(leadByte: byte)
                guard length > 0 else {
                    index += 1
                    continue
                }
                guard index + length <= pending.count else { break decoding }
                let text = String(decoding: pending[index..<(index + length)], as: UTF8.self)
                keys.append(contentsOf: text.map(Key.character))
                index += length
            default:
                if let key = Self.controlKey(byte) { keys.append(key) }
                index += 1
            }
        }
        pending.removeFirst(index)
        return keys
    }

    /// The key of control byte `byte`, if it has one.
    private static func controlKey(_ byte: UInt8) -> Key? {
        switch byte {
        case 0x0D, 0x0A: .enter
        case 0x7F, 0x08: .backspace
        case 0x01: .home
        case 0x05: .end
        case 0x02: .left
        case 0x06: .right
        case 0x10: .up
        case 0x0E: .down
        case 0x15: .eraseLine
        case 0x0B: .eraseToEnd
        case 0x17: .eraseWord
        case 0x04: .endOfInput
        case 0x03: .interrupt
        case 0x0C: .redraw
        default: nil
        }
    }

    /// The escape sequence starting at `start`: its key (`nil` when unknown) and length, or
    /// `nil` when the sequence is not complete yet.
    private func escapeSequence(at start: Int) -> (Key?, Int)? {
        guard start + 1 < pending.count else { return nil }
        let introducer = pending[start + 1]
        guard introducer == UInt8(ascii: "[") || introducer == UInt8(ascii: "O") else {
            return (nil, 1)  // Escape alone, or Alt with a key: ignored
        }
        var end = start + 2
        while end < pending.count, !(0x40...0x7E).contains(pending[end]) { end += 1 }
        guard end < pending.count else { return nil }
        let parameters = String(decoding: pending[(start + 2)..<end], as: UTF8.self)
        let key: Key? = switch Character(Unicode.Scalar(pending[end])) {
        case "A": .up
        case "B": .down
        case "C": .right
        case "D": .left
        case "H": .home
        case "F": .end
        case "~":
            switch parameters.split(separator: ";").first ?? "" {
            case "1", "7": .home
            case "4", "8": .end
            case "3": .delete
            default: nil
            }
        default: nil
        }
        return (key, end - start + 1)
    }

    /// The length of the UTF-8 sequence starting with `leadByte`; 0 when it cannot start one.
    private static func utf8Length(leadByte: UInt8) -> Int {
        switch leadByte {
        case 0xC2...0xDF: 2
        case 0xE0...0xEF: 3
        case 0xF0...0xF4: 4
        default: 0
        }
    }
}
