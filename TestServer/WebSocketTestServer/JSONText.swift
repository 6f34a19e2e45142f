/// A minimal JSON value, rendered with sorted keys so output is stable in tests.
enum JSONText: Sendable, Equatable {
    case string(String)
    case number(Int)
    case bool(Bool)
    case null
    case object([String: JSONText])
    case array([JSONText])

    var rendered: String {
        switch self {
        case .string(let text): Self.quoted(text)
        case .number(let value): String(value)
        case .bool(let value): value ? "true" : "false"
        case .null: "null"
        case .object(let members):
            "{" + members.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)):\($0.value.rendered)" }.joined(separator: ",") + "}"
        case .array(let items):
            "[" + items.map(\.rendered).joined(separator: ",") + "]"
        }
    }

    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
