/// The text being typed at the interactive prompt, with the cursor and a history.
///
/// Pure: keys in, outcomes out. ``PromptLine`` draws it.
struct LineEditor: Sendable {
    /// What a key did.
    enum Outcome: Sendable, Equatable {
        /// Nothing changed (e.g. Left at the start).
        case unchanged
        /// The text or cursor changed: draw the line again.
        case edited
        /// Enter: this line was submitted and the editor is empty again.
        case submitted(String)
        /// Ctrl-D on an empty line.
        case endOfInput
        /// Ctrl-C.
        case interrupted
    }

    /// The characters typed so far.
    private(set) var characters: [Character] = []
    /// Where the cursor is: an index into ``characters``.
    private(set) var cursor = 0
    private var history: [String] = []
    /// The history entry shown, counted from the oldest; `nil` while editing a new line.
    private var historyPosition: Int?
    /// The new line being typed when the user went up into the history.
    private var draft: [Character] = []

    /// The text as a string.
    var text: String { String(characters) }

    /// Applies one key.
    mutating func apply(_ key: Key) -> Outcome {
        switch key {
        case .character(let character):
            characters.insert(character, at: cursor)
            cursor += 1
        case .enter:
            let line = text
            if !line.isEmpty, history.last != line { history.append(line) }
            characters = []
            cursor = 0
            historyPosition = nil
            return .submitted(line)
        case .backspace:
            guard cursor > 0 else { return .unchanged }
            cursor -= 1
            characters.remove(at: cursor)
        case .delete:
            guard cursor < characters.count else { return .unchanged }
            characters.remove(at: cursor)
        case .endOfInput:
            if characters.isEmpty { return .endOfInput }
            return apply(.delete)
        case .interrupt:
            return .interrupted
        case .left:
            guard cursor > 0 else { return .unchanged }
            cursor -= 1
        case .right:
            guard cursor < characters.count else { return .unchanged }
            cursor += 1
        case .home:
            guard cursor > 0 else { return .unchanged }
            cursor = 0
        case .end:
            guard cursor < characters.count else { return .unchanged }
            cursor = characters.count
        case .eraseLine:
            guard !characters.isEmpty else { return .unchanged }
            characters = []
            cursor = 0
        case .eraseToEnd:
            guard cursor < characters.count else { return .unchanged }
            characters.removeSubrange(cursor...)
        case .eraseWord:
            guard cursor > 0 else { return .unchanged }
            var start = cursor
            while start > 0, characters[start - 1].isWhitespace { start -= 1 }
            while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
            characters.removeSubrange(start..<cursor)
            cursor = start
        case .up:
            return showHistory(at: (historyPosition ?? history.count) - 1)
        case .down:
            guard let historyPosition else { return .unchanged }
            return showHistory(at: historyPosition + 1)
        case .redraw:
            break
        }
        return .edited
    }

    /// Shows history entry `position`; one past the newest shows the draft again.
    private mutating func showHistory(at position: Int) -> Outcome {
        guard position >= 0, !history.isEmpty else { return .unchanged }
        if historyPosition == nil { draft = characters }
        if position >= history.count {
            historyPosition = nil
            characters = draft
        } else {
            historyPosition = position
            characters = Array(history[position])
        }
        cursor = characters.count
        return .edited
    }
}
