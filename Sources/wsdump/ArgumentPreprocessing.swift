/// Rewrites Python-wsdump command lines into ones ArgumentParser understands.
///
/// - `-v N`, `--verbose N` and `--verbose=N` (Python's optional count) become `N` times `-v`.
/// - A URL swallowed by `-s/--subprotocols` (which takes every value up to the next option,
///   as in Python: `wsdump -s chat superchat ws://host/`) is moved to the front.
///
/// Values of options that take exactly one value are passed through untouched, so
/// `-t -v` still sends the text `-v`.
enum ArgumentPreprocessing {
    /// Options followed by exactly one value.
    static let optionsWithOneValue: Set<String> = [
        "-p", "--proxy", "-o", "--origin", "--eof-wait", "-t", "--text", "--headers", "-H", "--header",
        "--ca-file", "--cert", "--key", "--file", "--count", "--timeout", "--ping-interval", "--pin", "--servername",
        "--resolve", "--connect-to", "--max-redirects", "--local-address", "--header-command", "--sensitive-header", "--max-message-size",
    ]

    /// The arguments (without the program name) rewritten.
    static func rewrite(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var urls: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            switch argument {
            case "--":
                result.append(contentsOf: arguments[index...])
                return urls + result
            case "-v", "--verbose":
                if let next, let level = verbosityLevel(next) {
                    result.append(contentsOf: Array(repeating: "-v", count: level))
                    index += 2
                } else {
                    result.append(argument)
                    index += 1
                }
            case "-s", "--subprotocols":
                result.append(argument)
                index += 1
                while index < arguments.count, !arguments[index].hasPrefix("-") {
                    if arguments[index].contains("://") {
                        urls.append(arguments[index])
                    } else {
                        result.append(arguments[index])
                    }
                    index += 1
                }
            default:
                if argument.hasPrefix("--verbose="), let level = verbosityLevel(String(argument.dropFirst(10))) {
                    result.append(contentsOf: Array(repeating: "-v", count: level))
                    index += 1
                } else if optionsWithOneValue.contains(argument), let next {
                    result.append(contentsOf: [argument, next])
                    index += 2
                } else {
                    result.append(argument)
                    index += 1
                }
            }
        }
        return urls + result
    }

    /// `text` as a verbosity level (a small non-negative integer), or `nil`.
    private static func verbosityLevel(_ text: String) -> Int? {
        guard let level = Int(text), (0...9).contains(level), text.allSatisfy(\.isNumber) else { return nil }
        return level
    }
}
