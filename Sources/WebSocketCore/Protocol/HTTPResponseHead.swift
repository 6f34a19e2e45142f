/// One header field of an HTTP response, as the server spelled its name.
package struct HTTPHeaderField: Sendable, Hashable {
    /// The field name, in the server's spelling.
    package var name: String
    /// The field value with surrounding whitespace removed.
    package var value: String
}

/// The status line and header fields of an HTTP/1.x response, as ``HTTPResponseParser``
/// read them.
package struct HTTPResponseHead: Sendable, Hashable {
    /// The protocol version from the status line, e.g. `HTTP/1.1`.
    package var version: String
    /// The three-digit status code, e.g. `101`.
    package var status: Int
    /// The reason phrase, possibly empty, e.g. `Switching Protocols`.
    package var reasonPhrase: String
    /// The header fields in the order received; names may repeat.
    package var headers: [HTTPHeaderField]

    /// The value of the field called `name` (compared case-insensitively), or `nil` when
    /// there is none. Several fields of that name are joined with `", "` in the order received.
    package func value(of name: String) -> String? {
        let wanted = name.lowercased()
        let values = headers.lazy.filter { $0.name.lowercased() == wanted }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// All fields as a dictionary, keyed by ``canonicalName(_:)`` of each name; the values
    /// of fields whose names differ only in case are joined with `", "`.
    package var headerDictionary: [String: String] {
        var dictionary: [String: String] = [:]
        var keyForLowercasedName: [String: String] = [:]
        for field in headers {
            let lowercased = field.name.lowercased()
            if let key = keyForLowercasedName[lowercased] {
                dictionary[key, default: ""] += ", " + field.value
            } else {
                let key = Self.canonicalName(field.name)
                keyForLowercasedName[lowercased] = key
                dictionary[key] = field.value
            }
        }
        return dictionary
    }

    /// A header name in its usual spelling whatever the server sent: each dash-separated
    /// word capitalised ("retry-after" -> "Retry-After"), with the registered exceptions
    /// ("WWW-Authenticate", "Sec-WebSocket-Accept", "ETag").
    package static func canonicalName(_ name: String) -> String {
        let words = name.split(separator: "-", omittingEmptySubsequences: false).map { word -> String in
            switch word.lowercased() {
            case "www": "WWW"
            case "websocket": "WebSocket"
            case "etag": "ETag"
            default: word.prefix(1).uppercased() + word.dropFirst().lowercased()
            }
        }
        return words.joined(separator: "-")
    }
}
