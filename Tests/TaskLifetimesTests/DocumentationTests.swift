#if os(Linux)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing

/// Keeps the Lifetimes article honest: its Swift code must be the compiled,
/// runnable code of the `TaskLifetimesExamples` target.
@Suite("Documentation")
struct DocumentationTests {
    static let packageRoot: String = {
        // <root>/Tests/TaskLifetimesTests/DocumentationTests.swift
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    static let exampleFiles = [
        "ExamplesMain.swift", "Timer.swift", "NotificationHub.swift", "AppLifetime.swift",
        "UserSessionLifetime.swift", "ScreenLifetime.swift", "FeatureLifetime.swift",
    ]

    @Test("Every Swift code block of Lifetimes.md appears verbatim in the compiled examples")
    func articleMatchesExamples() throws {
        let article = try #require(
            readFile("\(Self.packageRoot)/Sources/TaskLifetimes/TaskLifetimes.docc/Lifetimes.md")
        )
        var examples: [String] = []
        for name in Self.exampleFiles {
            examples.append(try #require(readFile("\(Self.packageRoot)/Examples/TaskLifetimesExamples/\(name)")))
        }

        let blocks = swiftCodeBlocks(in: article)
        #expect(blocks.count >= 7)
        for block in blocks {
            #expect(examples.contains { $0.contains(block) }, "Not in the examples:\n\(block)")
        }
    }

    /// The contents of the code blocks fenced with "```swift".
    private func swiftCodeBlocks(in markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if let lines = current, line == "```" {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// Reads a UTF-8 text file, or returns `nil` if it cannot be opened.
    private func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
