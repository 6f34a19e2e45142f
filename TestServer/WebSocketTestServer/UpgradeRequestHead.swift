/// The head of an HTTP upgrade request, as the raw TLS listener reads it itself: the
/// request target and the header fields.
///
/// A pure value: ``endOfHead(in:)`` finds where the head ends in the bytes received so
/// far, and ``init(_:)`` parses it.
struct UpgradeRequestHead: Equatable {
    /// The request target, e.g. `/hostile/garbage?seed=7`.
    var target: String
    /// Header fields by lowercased name; a repeated field's values joined with ", ".
    var headers: [String: String]

    /// The target's path, e.g. `/hostile/garbage`.
    var path: String {
        String(target.prefix { $0 != "?" })
    }

    /// The target's query parameters, decoded.
    var query: [String: String] {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        return ServerRoute.parseQuery(String(target[target.index(after: mark)...]))
    }

    /// Parses `GET <target> HTTP/1.1` and the header lines that follow; nil when the
    /// request line is not a GET.
    init?(_ head: some Collection<UInt8>) {
        let text = String(decoding: head, as: UTF8.self)
        // "\r\n" is one Character in Swift, so split on it as a whole.
        var lines = text.split(separator: "\r\n")[...]
        guard let requestLine = lines.popFirst() else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[0] == "GET" else { return nil }
        target = String(parts[1])
        headers = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: " \t").lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
    }

    /// The index just past the blank line that ends a request head in `bytes`, or nil
    /// while it has not arrived.
    static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }
}

extension Substring {
    /// The text without leading and trailing characters from `characters`.
    func trimmingCharacters(in characters: String) -> String {
        let kept = drop { characters.contains($0) }
        return String(kept.reversed().drop { characters.contains($0) }.reversed())
    }
}
