import Foundation

/// One ```swift block of a Markdown file (the README or a DocC article), and the Swift file
/// that typechecks it as a user's code would be: against the built modules, as another
/// package, with `#sourceLocation` pointing every error at the Markdown line.
///
/// How a block is compiled is said by an HTML comment on the line before its fence (GitHub
/// and DocC show neither):
/// - no comment: statements, wrapped in an `async throws` function (local declarations are
///   fine there); its `import` lines are moved to the top of the file;
/// - `<!-- snippet: declarations -->`: compiled at file scope, together with the other
///   declaration blocks of the same Markdown file (an `@main` type, a `@Test` function, the
///   types of an article's example program);
/// - `<!-- snippet: excerpt PATH -->`: lines taken from a source file of this package that
///   the build compiles (an example program): every line must appear in PATH, in order;
/// - `<!-- snippet: skip REASON -->`: not compiled (a `Package.swift` fragment, or code meant
///   not to compile); the reason is required.
///
/// Statement and declaration blocks may use the names a reader's surrounding code would
/// have (`connection`, `server`, `handle(_:)`, ...): ``given`` declares them.
struct DocumentationSnippet: Equatable {
    enum Kind: Equatable {
        case statements
        case declarations
        case excerpt(path: String)
        case skipped(reason: String)
    }

    /// The Markdown file, as the error messages name it.
    var file: String
    /// The line of the block's first code line in `file` (1-based).
    var firstLine: Int
    var lines: [String]
    var kind: Kind

    /// Modules every snippet may use without importing them.
    static let defaultImports = ["Foundation", "TaskLifetimes", "Testing", "WebSocketStreams", "WebSocketTestServer"]

    /// The names the fragments take as given, as a reader's surrounding code would have them;
    /// typechecked with every snippet, never run.
    static let given = """
        import CoreMetrics
        import Foundation
        import Logging
        import ServiceLifecycle
        import TaskLifetimes
        import Testing
        import WebSocketStreams
        import WebSocketTestServer

        func given<Value>() -> Value { fatalError("documentation snippets are typechecked, never run") }
        let connection: WebSocket = given()
        let socket: ReconnectingWebSocket = given()
        let server: TestServer = given()
        let policy = ReconnectPolicy()
        let manualClock: any Clock<Duration> = ContinuousClock()
        let token = "a secret"
        let logger = Logger(label: "docs")
        let app: any Service = given()
        let metrics: any MetricsFactory = given()
        func handle(_ message: WebSocketMessage) {}
        actor Prices { func apply(_ message: WebSocketMessage) {} }
        let prices = Prices()
        struct User: Sendable, Identifiable { let id: String }
        let user: User? = nil
        let jpegData = Data()
        struct OrderBook { func apply(_ batch: [WebSocketMessage]) {} }
        let book = OrderBook()
        struct Subscribe: Encodable { var op = "subscribe"; var channel: String }
        struct Trade: Decodable { var price: Double; var size: Double }
        struct UserSession: RunUntilCancelled {
            init(_ user: User) {}
            init(user: User) {}
            func runUntilCancelled() async {}
        }
        """

    /// Whether every line of this block stands in `source`, in order (blank lines aside).
    func isExcerpt(of source: String) -> Bool {
        var remaining = source.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: " ") }[...]
        for line in lines.map({ $0.trimmingCharacters(in: " ") }) where !line.isEmpty {
            guard let index = remaining.firstIndex(of: line) else { return false }
            remaining = remaining[(index + 1)...]
        }
        return true
    }

    /// Every ```swift block of `markdown`, in order.
    static func all(inMarkdown markdown: String, file: String) -> [DocumentationSnippet] {
        var snippets: [DocumentationSnippet] = []
        var marker: String?
        var open: DocumentationSnippet?
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: " ")
            if var current = open {
                if trimmed == "```" {
                    snippets.append(current)
                    open = nil
                } else {
                    current.lines.append(String(line))
                    open = current
                }
                continue
            }
            if trimmed == "```swift" {
                open = DocumentationSnippet(file: file, firstLine: index + 2, lines: [], kind: kind(marker))
                marker = nil
            } else if trimmed.hasPrefix("<!-- snippet:") {
                marker = trimmed
            } else if !trimmed.isEmpty {
                marker = nil
            }
        }
        return snippets
    }

    private static func kind(_ marker: String?) -> Kind {
        guard let marker else { return .statements }
        let words = marker.dropFirst("<!-- snippet:".count).dropLast("-->".count).trimmingCharacters(in: " ")
        if words == "declarations" { return .declarations }
        if words.hasPrefix("excerpt ") { return .excerpt(path: words.dropFirst("excerpt ".count).trimmingCharacters(in: " ")) }
        if words.hasPrefix("skip") { return .skipped(reason: words.dropFirst("skip".count).trimmingCharacters(in: " ")) }
        return .skipped(reason: "")  // an unknown marker: reported by the test as having no reason
    }

    /// The Swift source that typechecks this block; `name` makes its function unique.
    func source(name: String) -> String {
        let imports = lines.filter { $0.hasPrefix("import ") }
        let allImports = Self.defaultImports.map { "import \($0)" } + imports.filter { line in
            !Self.defaultImports.contains { line == "import \($0)" }
        }
        var source = allImports.joined(separator: "\n") + "\n\n"
        let escapedFile = file.replacingOccurrences(of: "\"", with: "\\\"")
        switch kind {
        case .declarations:
            source += "#sourceLocation(file: \"\(escapedFile)\", line: \(firstLine))\n"
            source += lines.map { $0.hasPrefix("import ") ? "" : $0 }.joined(separator: "\n")
            source += "\n#sourceLocation()\n"
        case .statements, .excerpt, .skipped:
            source += "func \(name)() async throws {\n"
            source += "#sourceLocation(file: \"\(escapedFile)\", line: \(firstLine))\n"
            source += lines.map { $0.hasPrefix("import ") ? "" : $0 }.joined(separator: "\n")
            source += "\n#sourceLocation()\n}\n"
        }
        return source
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        var text = Substring(self)
        while text.first == character { text.removeFirst() }
        while text.last == character { text.removeLast() }
        return String(text)
    }
}
