/// What the server agreed to in a valid `101 Switching Protocols` answer.
package struct NegotiatedHandshake: Sendable, Equatable {
    /// The subprotocol the server chose from those offered, or `nil` when it chose none.
    package var subprotocol: String?
    /// The raw `Sec-WebSocket-Extensions` value the server accepted, or `nil` when absent or empty.
    package var extensions: String?
    /// The response's header fields (see ``HTTPResponseHead/headerDictionary``).
    package var headers: [String: String]
}

/// Checks the server's answer to the opening handshake (RFC 6455 section 4.1, the
/// client's requirements on the response).
///
/// Any status other than 101 is ``Failure/rejected(status:)`` (the caller reads the body
/// and reports the rejection); a 101 that breaks a rule is ``Failure/invalid(_:)`` with
/// the reason, and the connection must be failed.
package enum HandshakeValidator {
    /// Why the server's answer does not open a WebSocket connection.
    package enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The server answered with this status instead of 101.
        case rejected(status: Int)
        /// The 101 response breaks RFC 6455; the sentence says how.
        case invalid(String)

        /// A sentence saying what the server did wrong.
        package var description: String {
            switch self {
            case .rejected(let status): "the server answered with HTTP \(status) instead of 101 Switching Protocols"
            case .invalid(let reason): reason
            }
        }
    }

    /// Validates `head` as the answer to a request sent with `key`, `offeredSubprotocols`
    /// and extension names `offeredExtensions` (e.g. `["permessage-deflate"]`).
    ///
    /// Checks, in order: status 101; an `Upgrade` field with the token `websocket` and a
    /// `Connection` field with the token `upgrade` (both case-insensitive); a
    /// `Sec-WebSocket-Accept` matching ``HandshakeRequest/acceptValue(forKey:sha1:)``; a
    /// `Sec-WebSocket-Protocol`, if any, that is exactly one of those offered; and
    /// `Sec-WebSocket-Extensions` naming only offered extensions, each at most once.
    /// Extension parameters are not checked here: that is the extension's own negotiation.
    package static func validate(
        _ head: HTTPResponseHead,
        key: String,
        sha1: ([UInt8]) -> [UInt8],
        offeredSubprotocols: [String],
        offeredExtensions: [String]
    ) -> Result<NegotiatedHandshake, Failure> {
        guard head.status == 101 else { return .failure(.rejected(status: head.status)) }

        guard tokens(of: head.value(of: "Upgrade")).contains("websocket") else {
            return .failure(.invalid("the server's 101 response has no 'Upgrade: websocket' header"))
        }
        guard tokens(of: head.value(of: "Connection")).contains("upgrade") else {
            return .failure(.invalid("the server's 101 response has no 'Connection: Upgrade' header"))
        }

        guard let accept = head.value(of: "Sec-WebSocket-Accept") else {
            return .failure(.invalid("the server's 101 response has no Sec-WebSocket-Accept header"))
        }
        let expectedAccept = HandshakeRequest.acceptValue(forKey: key, sha1: sha1)
        guard accept == expectedAccept else {
            return .failure(.invalid(
                "the server's Sec-WebSocket-Accept does not match the key (expected \(expectedAccept), got \(accept))"
            ))
        }

        var subprotocol: String?
        if let chosen = head.value(of: "Sec-WebSocket-Protocol"), !chosen.isEmpty {
            guard !offeredSubprotocols.isEmpty else {
                return .failure(.invalid("the server chose subprotocol '\(chosen)', but the client offered none"))
            }
            guard offeredSubprotocols.contains(chosen) else {
                return .failure(.invalid("the server chose subprotocol '\(chosen)', which the client did not offer"))
            }
            subprotocol = chosen
        }

        var extensions: String?
        if let accepted = head.value(of: "Sec-WebSocket-Extensions"), !accepted.isEmpty {
            let offered = Set(offeredExtensions.map { $0.lowercased() })
            var seen: Set<String> = []
            for name in extensionNames(in: accepted) {
                guard offered.contains(name.lowercased()) else {
                    return .failure(.invalid("the server accepted extension '\(name)', which the client did not offer"))
                }
                guard seen.insert(name.lowercased()).inserted else {
                    return .failure(.invalid("the server accepted extension '\(name)' more than once"))
                }
            }
            extensions = accepted
        }

        return .success(NegotiatedHandshake(
            subprotocol: subprotocol,
            extensions: extensions,
            headers: head.headerDictionary
        ))
    }

    /// The lowercased, trimmed, non-empty comma-separated tokens of `value`.
    private static func tokens(of value: String?) -> [String] {
        guard let value else { return [] }
        return value.split(separator: ",").map { trimmed($0).lowercased() }.filter { !$0.isEmpty }
    }

    /// The extension names in a `Sec-WebSocket-Extensions` value: each comma-separated
    /// element's text before its first `;`, trimmed. Commas inside quoted parameter values
    /// do not separate elements; empty elements are skipped.
    private static func extensionNames(in value: String) -> [String] {
        var names: [String] = []
        var element = ""
        var inQuotes = false
        var escaped = false
        for character in value {
            if inQuotes {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inQuotes = false
                }
            } else if character == "\"" {
                inQuotes = true
            } else if character == "," {
                names.append(element)
                element = ""
                continue
            }
            element.append(character)
        }
        names.append(element)
        return names.compactMap { element in
            let name = trimmed(element.prefix { $0 != ";" })
            return name.isEmpty ? nil : name
        }
    }

    /// `text` without leading and trailing spaces and tabs.
    private static func trimmed(_ text: some StringProtocol) -> String {
        let isWhitespace = { (character: Character) in character == " " || character == "\t" }
        guard let first = text.firstIndex(where: { !isWhitespace($0) }),
              let last = text.lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(text[first...last])
    }
}
