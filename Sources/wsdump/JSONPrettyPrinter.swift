import Foundation

/// Re-indents JSON text for `--json`, keeping the members in the order they were sent and
/// every number and string exactly as written.
enum JSONPrettyPrinter {
    /// `text` indented two spaces per level when it is a JSON object or array; `nil` otherwise.
    static func format(_ text: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        guard let first = scalars.first(where: { !isJSONWhitespace($0) }), first == "{" || first == "[",
              (try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil else { return nil }
        var output = String.UnicodeScalarView()
        var depth = 0
        var inString = false
        var escaped = false
        var index = 0
        func newline() {
            output.append("\n")
            output.append(contentsOf: String(repeating: "  ", count: depth).unicodeScalars)
        }
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            if inString {
                output.append(scalar)
                if escaped {
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    inString = false
                }
                continue
            }
            switch scalar {
            case "\"":
                inString = true
                output.append(scalar)
            case "{", "[":
                output.append(scalar)
                let next = scalars[index...].firstIndex(where: { !isJSONWhitespace($0) })
                if let next, scalars[next] == (scalar == "{" ? "}" : "]") {
                    output.append(scalars[next])
                    index = next + 1
                } else {
                    depth += 1
                    newline()
                }
            case "}", "]":
                depth -= 1
                newline()
                output.append(scalar)
            case ",":
                output.append(scalar)
                newline()
            case ":":
                output.append(contentsOf: ": ".unicodeScalars)
            default:
                if !isJSONWhitespace(scalar) { output.append(scalar) }
            }
        }
        return String(output)
    }

    private static func isJSONWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
    }
}
