/// Draws the prompt and the text being edited as one terminal line.
///
/// The result starts at column 0 and ends with the cursor moved back to where it is in the
/// text (`ESC [ n D`). When the text is wider than the terminal, a window of it around the
/// cursor is shown, so the line never wraps (a wrapped line could not be redrawn in place).
enum PromptLine {
    /// The line to write after clearing the current one.
    ///
    /// - Parameters:
    ///   - prompt: The prompt, possibly with color codes.
    ///   - promptWidth: The columns the prompt takes on screen.
    ///   - characters: The text being edited.
    ///   - cursor: The cursor's index in `characters`.
    ///   - columns: The terminal's width, when known.
    static func render(prompt: String, promptWidth: Int, characters: [Character], cursor: Int, columns: Int?) -> String {
        let widths = characters.map(displayWidth)
        var start = 0
        var end = characters.count
        if let columns, columns > 0 {
            let available = max(2, columns - promptWidth - 1)
            if widths.reduce(0, +) > available {
                start = cursor
                var used = 0
                while start > 0, used + widths[start - 1] <= available - 1 {
                    start -= 1
                    used += widths[start]
                }
                end = start
                used = 0
                while end < characters.count, used + widths[end] <= available {
                    used += widths[end]
                    end += 1
                }
            }
        }
        let back = widths[min(cursor, end)..<end].reduce(0, +)
        return prompt + String(characters[start..<end]) + (back > 0 ? "\u{1B}[\(back)D" : "")
    }

    /// The columns `character` takes: 2 for East Asian wide characters and most emoji, else 1.
    static func displayWidth(_ character: Character) -> Int {
        guard let value = character.unicodeScalars.first?.value else { return 0 }
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }
}
