import Foundation
import Testing
import WebSocketStreams
@testable import wsdump

@Suite("MessageFormatter golden strings")
struct MessageFormatterTests {
    let pipe = MessageFormatter()
    let terminal = MessageFormatter(decorated: true)
    let verboseTerminal = MessageFormatter(decorated: true, showsType: true)

    @Test func textInAPipeIsJustTheData() {
        #expect(pipe.lines(for: .text("hello"), direction: .received) == ["hello"])
        #expect(pipe.lines(for: .text("a\nb"), direction: .received) == ["a\nb"])
    }

    @Test func textOnATerminalHasAPrefix() {
        #expect(terminal.lines(for: .text("hello"), direction: .received) == ["< hello"])
        #expect(terminal.lines(for: .text("hello"), direction: .sent) == ["> hello"])
        #expect(terminal.lines(for: .text("a\nb"), direction: .received) == ["< a", "  b"])
    }

    @Test func verboseShowsTheType() {
        #expect(verboseTerminal.lines(for: .text("hello"), direction: .received) == ["< text: hello"])
        #expect(verboseTerminal.lines(for: .binary(Data([1, 2, 3])), direction: .received)
            == ["< binary (3 bytes): 01 02 03"])
        #expect(MessageFormatter(showsType: true).lines(for: .text("hi"), direction: .received) == ["text: hi"])
    }

    @Test func sentMessagesAlwaysStartWithAnArrow() {
        #expect(pipe.lines(for: .text("hi"), direction: .sent) == ["> hi"])
    }

    @Test func timingsComeBeforeTheMessage() {
        #expect(pipe.lines(for: .text("hi"), direction: .received, elapsed: .milliseconds(12_345)) == ["12.345: hi"])
        #expect(terminal.lines(for: .text("hi"), direction: .received, elapsed: .milliseconds(1500)) == ["< 1.500: hi"])
    }

    @Test func binaryPreviewShowsTheSizeAndFirstBytes() {
        #expect(MessageFormatter.binaryPreview(Data()) == "binary (0 bytes)")
        #expect(MessageFormatter.binaryPreview(Data([0xFF])) == "binary (1 byte): ff")
        let twenty = Data((0..<20).map(UInt8.init))
        #expect(MessageFormatter.binaryPreview(twenty)
            == "binary (20 bytes): 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f ... (first 16 bytes shown)")
    }

    @Test func hexDumpLooksLikeHexdumpC() {
        let data = Data([0, 0, 0, 0, 0, 0, 0, 0] + Array(repeating: 0x61, count: 12))
        #expect(MessageFormatter(hexDump: true).lines(for: .binary(data), direction: .received) == [
            "binary (20 bytes):",
            "00000000  00 00 00 00 00 00 00 00  61 61 61 61 61 61 61 61  |........aaaaaaaa|",
            "00000010  61 61 61 61                                       |aaaa|",
        ])
        #expect(MessageFormatter.hexDump(Data("hello, world!\n".utf8)) == [
            "00000000  68 65 6c 6c 6f 2c 20 77  6f 72 6c 64 21 0a        |hello, world!.|",
        ])
    }

    @Test func hexDumpOnATerminalIsIndentedUnderThePrefix() {
        let lines = MessageFormatter(decorated: true, hexDump: true).lines(for: .binary(Data([0x41])), direction: .received)
        #expect(lines == ["< binary (1 byte):", "  00000000  41                                                |A|"])
    }

    @Test func jsonIsPrettyPrintedInOrder() {
        let formatter = MessageFormatter(prettyJSON: true)
        #expect(formatter.lines(for: .text(#"{"b":1,"a":[true,{}],"s":"x,y:{"}"#), direction: .received) == [
            """
            {
              "b": 1,
              "a": [
                true,
                {}
              ],
              "s": "x,y:{"
            }
            """,
        ])
        #expect(formatter.lines(for: .text("not json {"), direction: .received) == ["not json {"])
        #expect(formatter.lines(for: .text("42"), direction: .received) == ["42"])
    }

    @Test func closeAndControlFrameLines() {
        #expect(MessageFormatter.closeLine(code: .normalClosure, reason: "bye") == #"closed: 1000 (normal closure) "bye""#)
        #expect(MessageFormatter.closeLine(code: 4001, reason: "") == "closed: 4001 (private use)")
        #expect(MessageFormatter.controlFrameLine(.pingSent(keepalive: true)) == "> ping (keep-alive)")
        #expect(MessageFormatter.controlFrameLine(.pongReceived(roundTrip: .microseconds(420))) == "< pong (0.42 ms)")
        #expect(MessageFormatter.controlFrameLine(.closeReceived(code: .goingAway, reason: "x")) == #"< close: 1001 (going away) "x""#)
        #expect(MessageFormatter.controlFrameLine(.closeSent(code: .normalClosure, reason: "")) == "> close: 1000 (normal closure)")
    }

    @Test func reconnectStates() {
        #expect(MessageFormatter.stateLine(.reconnecting(after: .milliseconds(440), cause: .pongTimeout))
            == "reconnecting after 0.44 seconds (the peer did not answer a keep-alive ping in time)")
        #expect(MessageFormatter.stateLine(.connecting(attempt: 2)) == "connecting (attempt 2)")
        #expect(MessageFormatter.stateLine(.connected(subprotocol: "chat")) == "connected (chat)")
    }

    @Test func terminalOutputShowsControlCharactersInCaretNotation() {
        #expect(terminal.lines(for: .text("a\u{1B}[31mb\u{7}"), direction: .received) == ["< a^[[31mb^G"])
        #expect(pipe.lines(for: .text("a\u{1B}b"), direction: .received) == ["a\u{1B}b"])
    }
}
