/// ANSI colors for terminal output, or none.
///
/// Colors are used only on a terminal, never with `--raw` or `--jsonl`, and never when
/// `NO_COLOR` is set (to any value) or `TERM` is `dumb`.
struct Palette: Sendable {
    /// Whether escape codes are added at all.
    var isEnabled: Bool

    /// Received messages: green.
    func received(_ text: String) -> String { paint(text, "32") }
    /// Sent messages: cyan.
    func sent(_ text: String) -> String { paint(text, "36") }
    /// Status lines: dim.
    func status(_ text: String) -> String { paint(text, "2") }
    /// Errors: red.
    func error(_ text: String) -> String { paint(text, "31") }
    /// The input prompt: bold.
    func prompt(_ text: String) -> String { paint(text, "1") }

    /// Whether colors suit a stream: it is a terminal and the environment does not opt out.
    static func colorsWanted(isTerminal: Bool, environment: [String: String]) -> Bool {
        isTerminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
    }

    private func paint(_ text: String, _ code: String) -> String {
        guard isEnabled, !text.isEmpty else { return text }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}
