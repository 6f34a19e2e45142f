import FoundationEssentials

/// What the `/headers` route sends back: the upgrade request as the server saw it.
struct HandshakeSeen: Encodable {
    var path: String
    var subprotocol: String?
    var compressed: Bool
    var headers: [String: String]

    private enum CodingKeys: String, CodingKey {
        case path, subprotocol, compressed, headers
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(subprotocol, forKey: .subprotocol)  // null when none was chosen
        try container.encode(compressed, forKey: .compressed)
        try container.encode(headers, forKey: .headers)
    }

    /// Compact JSON with sorted keys, so the text is stable in tests.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
