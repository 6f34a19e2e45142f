import Foundation
import Testing
import WebSocketStreams
@testable import wsdump

@Suite("Slash commands")
struct SlashCommandTests {
    @Test func plainLinesAreSent() {
        #expect(SlashCommand.parse("hello") == .send("hello"))
        #expect(SlashCommand.parse("") == .send(""))
        #expect(SlashCommand.parse("//not a command") == .send("/not a command"))
    }

    @Test func ping() {
        #expect(SlashCommand.parse("/ping") == .ping(nil))
        #expect(SlashCommand.parse("/ping  are you there ") == .ping("are you there"))
    }

    @Test func close() {
        #expect(SlashCommand.parse("/close") == .close(code: .normalClosure, reason: ""))
        #expect(SlashCommand.parse("/close 4000") == .close(code: 4000, reason: ""))
        #expect(SlashCommand.parse("/close 1001 see you later") == .close(code: .goingAway, reason: "see you later"))
        #expect(SlashCommand.parse("/close 1006") == .invalid("close codes that may be sent are 1000-1003, 1007-1014 and 3000-4999"))
        #expect(SlashCommand.parse("/close soon") == .invalid("close codes that may be sent are 1000-1003, 1007-1014 and 3000-4999"))
        #expect(SlashCommand.parse("/close 1000 " + String(repeating: "x", count: 124)) == .invalid("a close reason holds at most 123 bytes"))
    }

    @Test func binary() {
        #expect(SlashCommand.parse("/binary 01 02 ff") == .binary(Data([1, 2, 0xFF])))
        #expect(SlashCommand.parse("/binary 0xDEADbeef") == .binary(Data([0xDE, 0xAD, 0xBE, 0xEF])))
        #expect(SlashCommand.parse("/binary 01:02") == .binary(Data([1, 2])))
        for bad in ["/binary", "/binary 123", "/binary zz", "/binary 0x"] {
            #expect(SlashCommand.parse(bad) == .invalid("usage: /binary HEX, e.g. /binary 01 02 ff"), "\(bad)")
        }
    }

    @Test func helpAndUnknownCommands() {
        #expect(SlashCommand.parse("/help") == .help)
        #expect(SlashCommand.parse("/HELP") == .help)
        #expect(SlashCommand.parse("/quit now")
            == .invalid("unknown command /quit; type /help for commands, or start the line with // to send it"))
        #expect(SlashCommand.helpLines.contains { $0.hasPrefix("/ping [text]") })
    }
}
