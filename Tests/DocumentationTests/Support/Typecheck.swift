import Foundation

/// Typechecks Swift files as code of another package would be: against the modules built
/// next to the test binary, where `package` symbols are out of reach.
enum Typecheck {
    /// This checkout's root.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Typechecks `files` as module `moduleName` of another package, against the modules
    /// built next to this test binary, with wsdump's Swift settings.
    /// `upcomingFeatures: false` leaves out the upcoming features this package enables, as a
    /// user's package in plain Swift 6 mode would.
    static func asOutsider(
        _ files: [String], moduleName: String, upcomingFeatures: Bool = true, extraArguments: [String] = []
    ) throws -> (status: Int32, output: String) {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let binDirectory = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try swiftcPath())
        process.arguments = [
            "-typecheck", "-wmo", "-module-name", moduleName, "-package-name", "outsider", "-swift-version", "6",
        ] + (upcomingFeatures ? ["-enable-upcoming-feature", "ExistentialAny", "-enable-upcoming-feature", "MemberImportVisibility"] : []) + [
            "-I", binDirectory.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CLibWebSockets/module.modulemap").path,
            "-Xcc", "-fmodule-map-file=" + packageRoot.appendingPathComponent("Sources/CZlib/module.modulemap").path,
            "-module-cache-path", binDirectory.appendingPathComponent("ModuleCache").path,
        ] + extraArguments + files
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

/// A test setup problem, with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
