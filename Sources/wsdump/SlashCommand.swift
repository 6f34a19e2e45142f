import Foundation
import WebSocketStreams

/// What a line typed at the interactive prompt asks for.
///
/// Lines not starting with `/` are sent as they are; `//text` sends `/text`.
///
/// | Line | Meaning |
/// |---|---|
/// | `/ping [text]` | Ping and print the round-trip time |
/// | `/close [code [reason]]` | Close with `code` (default 1000) and `reason` |
/// | `/binary HEX` | Send the bytes, e.g. `/binary 01 02 ff` |
/// | `/help` | List the commands |
enum SlashCommand: Sendable, Equatable {
    /// Send this text as a message.
    case send(String)
    /// Ping; the text is the payload the user asked for.
    case ping(String?)
    /// Close with this code and reason.
    case close(code: WebSocketCloseCode, reason: String)
    /// Send these bytes as a binary message.
    case binary(Data)
    /// Show ``helpLines``.
    case help
    /// Not understood; show this message.
    case invalid(String)

    /// What `line` asks for.
    static func parse(_ line: String) -> SlashCommand {
        guard line.hasPrefix("/") else { return .send(line) }
        if line.hasPrefix("//") { return .send(String(line.dropFirst())) }
        let body = line.dropFirst()
        let name = body.prefix(while: { !$0.isWhitespace })
        let argument = body.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
        switch name.lowercased() {
        case "ping":
            return .ping(argument.isEmpty ? nil : argument)
        case "close":
            return parseClose(argument)
        case "binary":
            guard let data = decodeHex(argument), !data.isEmpty else {
                return .invalid("usage: /binary HEX, e.g. /binary 01 02 ff")
            }
            return .binary(data)
        case "help", "?":
            return .help
        default:
            return .invalid("unknown command /\(name); type /help for commands, or start the line with // to send it")
        }
    }

    /// The text `/help` prints.
    static let helpLines = [
        "/ping [text]            ping the server and print the round-trip time",
        "/close [code [reason]]  close with code (default 1000) and reason, then quit",
        "/binary HEX             send bytes as a binary message, e.g. /binary 01 02 ff",
        "/help                   show this help",
        "//text                  send a line that starts with /",
        "Ctrl-D on an empty line closes with 1000; Ctrl-C closes with 1001 and quits.",
    ]

    /// `text` as bytes: pairs of hex digits, optionally separated by spaces or colons,
    /// optionally starting with `0x`. `nil` for anything else.
    static func decodeHex(_ text: String) -> Data? {
        var digits = text.filter { !$0.isWhitespace && $0 != ":" }
        if digits.lowercased().hasPrefix("0x") { digits.removeFirst(2) }
        guard digits.count.isMultiple(of: 2), digits.allSatisfy(\.isHexDigit) else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }

    private static func parseClose(_ argument: String) -> SlashCommand {
        guard !argument.isEmpty else { return .close(code: .normalClosure, reason: "") }
        let codeText = argument.prefix(while: { !$0.isWhitespace })
        let reason = argument.dropFirst(codeText.count).trimmingCharacters(in: .whitespaces)
        guard let number = UInt16(codeText), WebSocketCloseCode(rawValue: number).isValidInCloseFrame else {
            return .invalid("close codes that may be sent are 1000-1003, 1007-1014 and 3000-4999")
        }
        guard reason.utf8.count <= 123 else { return .invalid("a close reason holds at most 123 bytes") }
        return .close(code: WebSocketCloseCode(rawValue: number), reason: reason)
    }
}
