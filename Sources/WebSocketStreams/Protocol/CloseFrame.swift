/// The payload of a close frame (RFC 6455 section 5.5.1): an optional status code and a
/// UTF-8 reason, and the rules for both.
package struct CloseFrame: Sendable, Hashable {
    /// The code, or `nil` for an empty close frame (reported to users as 1005).
    package var code: WebSocketCloseCode?
    package var reason: String

    /// Parses a received close payload. An empty payload has no code; one byte, a code
    /// no endpoint may send (below 1000, 1004-1006, 1015, 1016-2999, 5000 and up) fail
    /// with 1002; a reason that is not UTF-8 fails with 1007.
    init(parsing payload: UnsafeRawBufferPointer) throws(ProtocolFailure) {
        guard !payload.isEmpty else {
            code = nil
            reason = ""
            return
        }
        guard payload.count >= 2 else { throw .protocolError("a close frame has a 1-byte payload") }
        let value = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard Self.mayBeReceived(value) else { throw .protocolError("the peer sent the invalid close code \(value)") }
        let reasonBytes = UnsafeRawBufferPointer(rebasing: payload[2...])
        guard let text = String(validating: reasonBytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw .invalidPayload("the close reason is not valid UTF-8")
        }
        code = WebSocketCloseCode(rawValue: value)
        reason = text
    }

    init(code: WebSocketCloseCode?, reason: String = "") {
        self.code = code
        self.reason = reason
    }

    /// Whether a peer may put `code` on the wire (``WebSocketCloseCode/isValidInCloseFrame``).
    static func mayBeReceived(_ code: UInt16) -> Bool {
        WebSocketCloseCode(rawValue: code).isValidInCloseFrame
    }

    /// The payload to send: the code and the reason cut to 123 bytes at a character
    /// boundary (a control frame holds 125); empty without a code.
    var payload: [UInt8] {
        guard let code else { return [] }
        var bytes: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var room = 123
        for character in reason {
            let utf8 = character.utf8
            if utf8.count > room { break }
            bytes.append(contentsOf: utf8)
            room -= utf8.count
        }
        return bytes
    }
}
