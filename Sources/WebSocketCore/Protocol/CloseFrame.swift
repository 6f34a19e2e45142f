/// The payload of a close frame (RFC 6455 section 5.5.1): an optional status code and a
/// UTF-8 reason, and the rules for both.
package struct CloseFrame: Sendable, Hashable {
    /// The code as on the wire, or `nil` for an empty close frame (reported to users as
    /// 1005). WebSocketStreams reads it as a `WebSocketCloseCode` (`code`).
    package var wireCode: UInt16?
    package var reason: String

    /// Parses a received close payload. An empty payload has no code; one byte, a code
    /// no endpoint may send (below 1000, 1004-1006, 1015, 1016-2999, 5000 and up) fail
    /// with 1002; a reason that is not UTF-8 fails with 1007.
    package init(parsing payload: UnsafeRawBufferPointer) throws(ProtocolFailure) {
        guard !payload.isEmpty else {
            wireCode = nil
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
        wireCode = value
        reason = text
    }

    package init(wireCode: UInt16?, reason: String = "") {
        self.wireCode = wireCode
        self.reason = reason
    }

    /// Whether `code` may appear in a close frame, sent or received (1000-1003, 1007-1014
    /// and 3000-4999; `WebSocketCloseCode.isValidInCloseFrame` asks here). 1005, 1006 and
    /// 1015 only ever describe a connection's end; a peer that sends one of those, or an
    /// unassigned code, breaks the protocol.
    package static func mayBeReceived(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The payload to send: the code and the reason cut to 123 bytes at a character
    /// boundary (a control frame holds 125); empty without a code.
    package var payload: [UInt8] {
        guard let code = wireCode else { return [] }
        var bytes: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
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
