import Foundation
import Testing

/// Every ```swift block of the README and of the DocC articles compiles against the public
/// API, so the docs break the build when the API moves (see ``DocumentationSnippet`` for how
/// a block says it is declarations, or is not meant to compile). Statement blocks are
/// checked together, each in a function of its own; the declaration blocks of one file
/// together, at file scope, as the parts of one program.
@Suite("Documentation snippets compile")
struct DocumentationSnippetTests {
    /// The Markdown files whose snippets are checked, relative to the checkout.
    static func markdownFiles() throws -> [String] {
        var files = ["README.md"]
        let enumerator = FileManager.default.enumerator(atPath: Typecheck.packageRoot.path)
        while let path = enumerator?.nextObject() as? String {
            if path.hasPrefix(".build") || path.hasPrefix("Benchmarks/") || path.hasPrefix(".git") {
                enumerator?.skipDescendants()
                continue
            }
            if path.contains(".docc/"), path.hasSuffix(".md") { files.append(path) }
        }
        return files.sorted()
    }

    @Test("every swift block of README.md and the DocC articles typechecks against the public API")
    func snippetsTypecheck() throws {
        var snippets: [DocumentationSnippet] = []
        for file in try Self.markdownFiles() {
            let text = try String(contentsOf: Typecheck.packageRoot.appendingPathComponent(file), encoding: .utf8)
            snippets += DocumentationSnippet.all(inMarkdown: text, file: file)
        }
        #expect(snippets.filter { $0.file == "README.md" }.count > 10, "README.md's snippets were not found")
        for snippet in snippets {
            if case .skipped(let reason) = snippet.kind {
                #expect(!reason.isEmpty, "\(snippet.file):\(snippet.firstLine - 1): a skipped snippet says why")
            }
        }
        for snippet in snippets {
            guard case .excerpt(let path) = snippet.kind else { continue }
            let source = try? String(contentsOf: Typecheck.packageRoot.appendingPathComponent(path), encoding: .utf8)
            #expect(source.map(snippet.isExcerpt(of:)) == true,
                    "\(snippet.file):\(snippet.firstLine): not an excerpt of \(path): copy it from there again")
        }
        let failures = try Self.typecheck(snippets.filter { $0.kind == .statements })
            + Dictionary(grouping: snippets.filter { $0.kind == .declarations }, by: \.file).values
                .flatMap { try Self.typecheck($0) }
        #expect(failures.isEmpty, "\(failures.count) errors:\n\(failures.joined(separator: "\n"))")
    }

    @Test("a snippet that calls a name that does not exist fails the check, at its Markdown line")
    func aWrongNameFails() throws {
        let markdown = """
            # Title

            ```swift
            let connection = try await WebSocket.connect(to: "ws://127.0.0.1:9001/echo")
            try await connection.sendd(.text("hello"))
            ```

            <!-- snippet: skip a fragment of Package.swift -->
            ```swift
            .product(name: "WebSocketStreams", package: "WebSocketStreams"),
            ```
            """
        let snippets = DocumentationSnippet.all(inMarkdown: markdown, file: "Example.md")
        #expect(snippets.map(\.firstLine) == [4, 10])
        #expect(snippets.last?.kind == .skipped(reason: "a fragment of Package.swift"))
        let failures = try Self.typecheck(snippets.filter { !$0.isSkipped })
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0.contains("Example.md:5:") }, "\(failures)")
        #expect(failures.first?.contains("sendd") == true, "\(failures)")
    }

    /// Typechecks `snippets` as one module of another package; returns the error lines.
    static func typecheck(_ snippets: [DocumentationSnippet]) throws -> [String] {
        guard !snippets.isEmpty else { return [] }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("snippets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let given = directory.appendingPathComponent("Given.swift")
        try Data(DocumentationSnippet.given.utf8).write(to: given)
        var files = [given.path]
        for (index, snippet) in snippets.enumerated() {
            let file = directory.appendingPathComponent("Snippet\(index).swift")
            try Data(snippet.source(name: "snippet\(index)").utf8).write(to: file)
            files.append(file.path)
        }
        let result = try Typecheck.asOutsider(
            files, moduleName: "Snippets", upcomingFeatures: false, extraArguments: ["-parse-as-library"])
        let errors = result.output.split(separator: "\n").filter { $0.contains(": error: ") }.map(String.init)
        if result.status != 0, errors.isEmpty { return ["swiftc failed: \(result.output)"] }
        return errors
    }
}

extension DocumentationSnippet {
    var isSkipped: Bool {
        if case .skipped = kind { true } else { false }
    }
}
