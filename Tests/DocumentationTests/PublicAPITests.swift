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
        let sources = try FileManager.default.contentsOfDirectory(atPath: Self.wsdumpSources.path)
            .filter { $0.hasSuffix(".swift") }.sorted().map { Self.wsdumpSources.appendingPathComponent($0).path }
        #expect(sources.count > 20, "wsdump's sources were not found at \(Self.wsdumpSources.path)")
        let result = try Self.typecheckAsOutsider(sources, moduleName: "wsdump")
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
        let result = try Self.typecheckAsOutsider([file.path], moduleName: "outsider")
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

    /// Typechecks `files` as module `moduleName` of another package, against the modules
    /// built next to this test binary, with wsdump's Swift settings.
    static func typecheckAsOutsider(_ files: [String], moduleName: String) throws -> (status: Int32, output: String) {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let binDirectory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        let packageRoot = wsdumpSources.deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try swiftcPath())
        process.arguments = [
            "-typecheck", "-wmo", "-module-name", moduleName, "-package-name", "outsider",
            "-swift-version", "6", "-enable-upcoming-feature", "ExistentialAny",
            "-enable-upcoming-feature", "MemberImportVisibility",
            "-I", binDirectory.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CLibWebSockets/module.modulemap").path,
            "-module-cache-path", binDirectory.appendingPathComponent("ModuleCache").path,
        ] + files
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// The `swiftc` on `PATH` (the toolchain that built the tests).
    static func swiftcPath() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/swiftc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestFailure("swiftc is not on PATH")
    }
}
