import Foundation

/// `--header-command CMD`: a command run through `/bin/sh -c` before every connection
/// attempt (each `--reconnect` attempt too), whose standard output gives headers for that
/// attempt, one `Name: value` per line (blank lines skipped): a way to present a fresh
/// token each time, e.g. `--header-command 'echo "Authorization: Bearer $(get-token)"'`.
struct HeaderCommand: Sendable {
    /// Why the command gave no headers: wsdump ends with ``status`` after printing ``message``.
    struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The command's exit status (128 + the signal's number when a signal ended it),
        /// or 2 when its output could not be read as headers.
        var status: Int32
        /// What the command printed on standard error, or what was wrong with its output.
        var message: String

        var description: String { message }
    }

    /// The shell command line.
    let command: String

    /// Runs the command to its end, off the cooperative pool, and returns its headers.
    func run() async throws(Failure) -> [(name: String, value: String)] {
        let command = command
        let outcome: Result<[(name: String, value: String)], Failure> = await withCheckedContinuation { continuation in
            BlockingThread.run(name: "wsdump header command") {
                continuation.resume(returning: Self.runBlocking(command))
            }
        }
        return try outcome.get()
    }

    /// Runs `command` and waits for it, on the calling thread.
    private static func runBlocking(_ command: String) -> Result<[(name: String, value: String)], Failure> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        // Standard error goes to a file, read once the command has ended: no second pipe
        // that could fill up while standard output is being read.
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-header-command-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: errorFile.path, contents: nil),
              let errors = try? FileHandle(forWritingTo: errorFile) else {
            return .failure(Failure(status: 2, message: "--header-command: cannot create a file for its standard error"))
        }
        defer {
            try? errors.close()
            try? FileManager.default.removeItem(at: errorFile)
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return .failure(Failure(status: 127, message: "--header-command: could not run /bin/sh: \(error)"))
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let stderrText = Self.contents(ofFile: errorFile.path)
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        guard status == 0 else {
            let text = String(decoding: stderrText, as: UTF8.self).trimmingCharacters(in: .newlines)
            return .failure(Failure(status: status, message: text.isEmpty ? "--header-command exited with status \(status)" : text))
        }
        do {
            return .success(try parse(String(decoding: outputData, as: UTF8.self)))
        } catch {
            return .failure(error)
        }
    }

    /// The bytes of the file at `path` (empty if it cannot be read). Read with POSIX calls:
    /// Foundation's `Data(contentsOf:)` leaks its buffer for an empty file.
    private static func contents(ofFile path: String) -> [UInt8] {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// The headers in `output`: one `Name: value` per line, blank lines skipped.
    static func parse(_ output: String) throws(Failure) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for line in output.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            guard let header = try? HeaderArguments.parse(line) else {
                throw Failure(status: 2, message: "--header-command printed '\(line)', which is not a 'Name: value' header")
            }
            headers.append(header)
        }
        return headers
    }
}
