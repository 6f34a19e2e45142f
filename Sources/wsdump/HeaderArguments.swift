import Foundation

/// Parses the header flags: repeatable `-H "Name: value"` and Python's `--headers "A: 1, B: 2"`.
enum HeaderArguments {
    /// Why a header argument was rejected.
    struct Invalid: Error, Equatable, CustomStringConvertible {
        var argument: String
        var description: String { "header '\(argument)' must look like 'Name: value'" }
    }

    /// One `Name: value` header; the value keeps its commas.
    static func parse(_ argument: String) throws -> (name: String, value: String) {
        guard let colon = argument.firstIndex(of: ":") else { throw Invalid(argument: argument) }
        let name = argument[..<colon].trimmingCharacters(in: .whitespaces)
        let value = argument[argument.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else { throw Invalid(argument: argument) }
        return (name, value)
    }

    /// Python wsdump's `--headers`: comma-separated `Name: value` pairs (values cannot hold commas).
    static func parseList(_ argument: String) throws -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for piece in argument.split(separator: ",") where !piece.trimmingCharacters(in: .whitespaces).isEmpty {
            headers.append(try parse(String(piece)))
        }
        return headers
    }
}
