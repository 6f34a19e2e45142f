import Foundation
import WebSocketStreams

/// Turns messages, control frames and endings into the lines wsdump prints.
///
/// Pure: no I/O and no colors (``Palette`` adds those), so every format is golden-tested.
///
/// | Setting | Text `hello` | Binary `01 02 03` |
/// |---|---|---|
/// | plain (a pipe, `--raw`) | `hello` | `binary (3 bytes): 01 02 03` |
/// | ``showsType`` (`-v`) | `text: hello` | `binary (3 bytes): 01 02 03` |
/// | ``decorated`` (a terminal) | `< hello` | `< binary (3 bytes): 01 02 03` |
///
/// With ``hexDump`` binary messages become a `hexdump -C`-style dump under a
/// `binary (N bytes):` line; with ``prettyJSON`` JSON objects and arrays are indented.
struct MessageFormatter: Sendable {
    /// Whether a message was received or sent.
    enum Direction: Sendable {
        case received
        case sent
    }

    /// `< ` before received messages, continuation lines indented to match, and control
    /// characters shown as `^X` so a peer cannot drive the terminal: for a terminal.
    var decorated = false
    /// `text: ` before text messages (`-v`).
    var showsType = false
    /// Binary messages as a full hex dump (`--hex`) instead of a preview.
    var hexDump = false
    /// JSON objects and arrays indented (`--json`).
    var prettyJSON = false

    /// How many bytes the binary preview shows.
    static let previewLength = 16

    /// The lines showing `message`, prefixed with the seconds since connecting when
    /// `elapsed` is given (`--timings`). Sent messages always start with `> `.
    func lines(for message: WebSocketMessage, direction: Direction, elapsed: Duration? = nil) -> [String] {
        var body: [String]
        switch message {
        case .text(let text):
            let content = prettyJSON ? (JSONPrettyPrinter.format(text) ?? text) : text
            if decorated {
                body = content.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map { Self.visible(String($0)) }
            } else {
                body = [content]
            }
            if showsType { body[0] = "text: " + body[0] }
        case .binary(let data):
            body = hexDump ? ["binary (\(Self.byteCount(data.count))):"] + Self.hexDump(data) : [Self.binaryPreview(data)]
        }
        if let elapsed { body[0] = Self.seconds(elapsed) + ": " + body[0] }
        if direction == .sent || decorated {
            body[0] = (direction == .received ? "< " : "> ") + body[0]
            for index in body.indices.dropFirst() { body[index] = "  " + body[index] }
        }
        return body
    }

    /// `binary (20 bytes): 00 01 ... (first 16 bytes shown)`: the size and the first bytes in hex.
    static func binaryPreview(_ data: Data) -> String {
        guard !data.isEmpty else { return "binary (0 bytes)" }
        let shown = data.prefix(previewLength).map(hexByte).joined(separator: " ")
        let more = data.count > previewLength ? " ... (first \(previewLength) bytes shown)" : ""
        return "binary (\(byteCount(data.count))): \(shown)\(more)"
    }

    /// `data` as `hexdump -C` shows it: 16 bytes a line, with the offset and an ASCII column.
    static func hexDump(_ data: Data) -> [String] {
        let bytes = [UInt8](data)
        return stride(from: 0, to: bytes.count, by: 16).map { offset in
            let row = bytes[offset..<min(offset + 16, bytes.count)]
            var hex = ""
            for (position, byte) in row.enumerated() {
                if position == 8 { hex += " " }
                hex += hexByte(byte) + " "
            }
            let padded = hex.padding(toLength: 49, withPad: " ", startingAt: 0)
            let ascii = String(row.map { (0x20...0x7E).contains($0) ? Character(Unicode.Scalar($0)) : "." })
            let offsetText = String(offset, radix: 16)
            return String(repeating: "0", count: max(0, 8 - offsetText.count)) + offsetText + "  " + padded + " |" + ascii + "|"
        }
    }

    /// `closed: 1000 (normal closure) "bye"`: how a connection ended.
    static func closeLine(code: WebSocketCloseCode, reason: String) -> String {
        "closed: \(code)" + quotedReason(reason)
    }

    /// One line for a control frame (`-vv`), e.g. `< pong (0.42 ms)` or `> close: 1000 (normal closure)`;
    /// the SDK's own description for other kinds.
    static func controlFrameLine(_ event: WebSocketWireEvent) -> String {
        switch event.kind {
        case .pingSent: event.isKeepalive ? "> ping (keep-alive)" : "> ping"
        case .pongReceived: "< pong (\(milliseconds(event.roundTrip ?? .zero)))"
        case .closeReceived: "< close: \(event.closeCode ?? .noStatusReceived)" + quotedReason(event.closeReason ?? "")
        case .closeSent: "> close: \(event.closeCode ?? .noStatusReceived)" + quotedReason(event.closeReason ?? "")
        default: event.description
        }
    }

    /// A message as named in the list of unsent ones: text quoted (cut after 40
    /// characters), binary by its size, e.g. `"hello"` or `binary (1024 bytes)`.
    static func shortName(of message: WebSocketMessage) -> String {
        switch message {
        case .text(let text):
            let cut = text.count > 40 ? String(text.prefix(40)) + "..." : text
            return visible(cut).debugDescription
        case .binary(let data):
            return "binary (\(byteCount(data.count)))"
        }
    }

    /// `1 message was not sent: "hello"`: the messages never delivered, at most five by name.
    static func undeliveredLine(_ names: [String]) -> String {
        let count = names.count
        var line = "\(count) message\(count == 1 ? " was" : "s were") not sent: " + names.prefix(5).joined(separator: ", ")
        if count > 5 { line += ", and \(count - 5) more" }
        return line
    }

    /// A `--reconnect` state change, e.g. `reconnecting after 0.44 seconds (connection failed: ...)`.
    static func stateLine(_ state: ReconnectingWebSocket.State) -> String {
        guard case .reconnecting(let delay, let cause) = state else { return state.description }
        return "reconnecting after \(String(format: "%.2f", delay.inSeconds)) seconds (\(cause))"
    }

    /// A round-trip time such as `0.42 ms`.
    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.2f ms", duration.inSeconds * 1000)
    }

    /// Elapsed time as seconds with three decimals, e.g. `12.345`.
    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f", duration.inSeconds)
    }

    /// `1 byte`, `20 bytes`.
    static func byteCount(_ count: Int) -> String {
        count == 1 ? "1 byte" : "\(count) bytes"
    }

    /// `text` with control characters other than tab shown in caret notation (`^[` for ESC).
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result.append("^")
                result.append(scalar.value == 0x7F ? "?" : Unicode.Scalar(UInt8(scalar.value) + 0x40))
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7F
    }

    private static func quotedReason(_ reason: String) -> String {
        reason.isEmpty ? "" : " " + reason.debugDescription
    }

    private static func hexByte(_ byte: UInt8) -> String {
        byte < 0x10 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
