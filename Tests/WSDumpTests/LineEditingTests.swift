import Testing
@testable import wsdump

@Suite("Line editing")
struct LineEditingTests {
    /// Applies the keys `bytes` decode to, returning the outcomes.
    private func type(_ bytes: String, into editor: inout LineEditor) -> [LineEditor.Outcome] {
        var decoder = KeyDecoder()
        return decoder.feed(Array(bytes.utf8)).map { editor.apply($0) }
    }

    @Test func decodesKeysAndSequences() {
        var decoder = KeyDecoder()
        #expect(decoder.feed(Array("a\u{1B}[D\u{1B}[C\u{1B}OH\u{1B}[4~\u{1B}[3~\u{7F}\r\n\u{3}\u{4}\u{15}".utf8)) == [
            .character("a"), .left, .right, .home, .end, .delete, .backspace, .enter, .interrupt, .endOfInput, .eraseLine,
        ])
        #expect(decoder.feed(Array("é€😀".utf8)) == [.character("é"), .character("€"), .character("😀")])
        #expect(decoder.feed(Array("\u{1B}[1;5C\u{1B}[200~".utf8)) == [.right])
    }

    @Test func keepsSplitSequencesUntilComplete() {
        var decoder = KeyDecoder()
        #expect(decoder.feed([0x1B]).isEmpty)
        #expect(decoder.feed([UInt8(ascii: "[")]).isEmpty)
        #expect(decoder.feed([UInt8(ascii: "A")]) == [.up])
        #expect(decoder.feed([0xE2, 0x82]).isEmpty)
        #expect(decoder.feed([0xAC]) == [.character("€")])
        #expect(decoder.feed([0x0D]) == [.enter])
        #expect(decoder.feed([0x0A, 0x0D]) == [.enter])
    }

    @Test func editsInTheMiddleOfTheLine() {
        var editor = LineEditor()
        _ = type("helo\u{1B}[Dl", into: &editor)
        #expect(editor.text == "hello")
        #expect(editor.cursor == 4)
        _ = type("\u{1}X\u{5}!", into: &editor)
        #expect(editor.text == "Xhello!")
        #expect(type("\r", into: &editor) == [.submitted("Xhello!")])
        #expect(editor.text.isEmpty && editor.cursor == 0)
    }

    @Test func erasing() {
        var editor = LineEditor()
        _ = type("one two three\u{17}", into: &editor)
        #expect(editor.text == "one two ")
        _ = type("\u{1B}[H\u{1B}[C\u{B}", into: &editor)
        #expect(editor.text == "o")
        _ = type("\u{15}", into: &editor)
        #expect(editor.text.isEmpty)
        #expect(type("\u{7F}", into: &editor) == [.unchanged])
    }

    @Test func controlDEndsInputOnlyOnAnEmptyLine() {
        var editor = LineEditor()
        _ = type("ab\u{1B}[D", into: &editor)
        #expect(type("\u{4}", into: &editor) == [.edited])
        #expect(editor.text == "a")
        _ = type("\u{15}", into: &editor)
        #expect(type("\u{4}", into: &editor) == [.endOfInput])
        #expect(type("\u{3}", into: &editor) == [.interrupted])
    }

    @Test func historyGoesUpAndBackDown() {
        var editor = LineEditor()
        _ = type("first\rsecond\rdraft", into: &editor)
        _ = type("\u{1B}[A", into: &editor)
        #expect(editor.text == "second")
        _ = type("\u{1B}[A\u{1B}[A", into: &editor)
        #expect(editor.text == "first")
        _ = type("\u{1B}[B\u{1B}[B", into: &editor)
        #expect(editor.text == "draft")
        #expect(type("\u{1B}[B", into: &editor) == [.unchanged])
    }

    @Test func promptLinePlacesTheCursor() {
        #expect(PromptLine.render(prompt: "> ", promptWidth: 2, characters: Array("hello"), cursor: 5, columns: 80) == "> hello")
        #expect(PromptLine.render(prompt: "> ", promptWidth: 2, characters: Array("hello"), cursor: 2, columns: nil)
            == "> hello\u{1B}[3D")
        #expect(PromptLine.render(prompt: "> ", promptWidth: 2, characters: Array("日本"), cursor: 1, columns: 80)
            == "> 日本\u{1B}[2D")
    }

    @Test func longLinesScrollInsteadOfWrapping() {
        let text = Array("abcdefghijklmnopqrstuvwxyz")
        // 12 columns: the prompt takes 2 and the last stays free: 9 characters, or 8 and the cursor.
        #expect(PromptLine.render(prompt: "> ", promptWidth: 2, characters: text, cursor: 26, columns: 12) == "> stuvwxyz")
        #expect(PromptLine.render(prompt: "> ", promptWidth: 2, characters: text, cursor: 0, columns: 12) == "> abcdefghi\u{1B}[9D")
    }

    @Test func lineSplitterHandlesEndingsAndTheLastLine() {
        var splitter = LineSplitter()
        #expect(splitter.feed(Array("a\nb\r\nc".utf8)) == [Array("a".utf8), Array("b".utf8)])
        #expect(splitter.feed(Array("d\n\n".utf8)) == [Array("cd".utf8), []])
        #expect(splitter.feed(Array("tail".utf8)).isEmpty)
        #expect(splitter.finish() == Array("tail".utf8))
        #expect(splitter.finish() == nil)
    }
}
