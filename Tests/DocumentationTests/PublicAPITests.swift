import Foundation
import Testing

/// wsdump is built with the SDK's public API only, as any user's program would be.
///
/// Inside this package wsdump could reach the SDK's `package` symbols too. The check
/// typechecks wsdump's sources against the built modules as if wsdump were another
/// package (`-package-name outsider`): any `package` symbol it uses is then an error.
@Suite("wsdump uses the public API only")
struct PublicAPITests {
    @Test func wsdumpTypechecksAsAnotherPackage() throws {
        // Every file, in subfolders too.
        let files = FileManager.default.enumerator(atPath: Self.wsdumpSources.path)?.compactMap { $0 as? String } ?? []
        let sources = files.filter { $0.hasSuffix(".swift") }.sorted().map { Self.wsdumpSources.appendingPathComponent($0).path }
        #expect(sources.count > 20, "wsdump's sources were not found at \(Self.wsdumpSources.path)")
        let result = try Typecheck.asOutsider(sources, moduleName: "wsdump")
        #expect(result.status == 0, "wsdump uses symbols that are not public:\n\(result.output)")
    }

    /// The check itself: a `package` symbol of the SDK fails it (so a passing check means
    /// something).
    @Test func aPackageSymbolFailsTheCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("UsesPackageSymbol.swift")
        try Data("""
            import WebSocketStreams
            let url = try? WebSocketURL(parsing: "ws://example.org/")
            let events: WebSocketWireEvent.Kind = .pingSent
            """.utf8).write(to: file)
        let result = try Typecheck.asOutsider([file.path], moduleName: "outsider")
        let errors = result.output.split(separator: "\n").filter { $0.contains(": error: ") }
        #expect(result.status != 0)
        // The package type is an error; the public one next to it is not.
        #expect(errors.contains { $0.contains("'WebSocketURL'") }, "\(result.output)")
        #expect(errors.count == 1, "\(result.output)")
    }

    /// `Sources/wsdump` of this checkout.
    static let wsdumpSources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/wsdump")
}
