import Foundation
import Glibc
import SynchronizationSupport
import Testing

/// The built `wsdump` binary, run as a child process with its output collected.
///
/// ```swift
/// let run = try WSDumpProcess(["-t", "hello", "--count", "1", url])
/// let result = await run.finish()
/// #expect(result.stdout == "hello\n")
/// ```
final class WSDumpProcess: Sendable {
    /// What the child's standard input is.
    enum Input: Sendable {
        /// `/dev/null`: input ends at once.
        case empty
        /// These bytes, then end of input.
        case bytes(String)
        /// A pipe the test writes to with ``write(_:)`` and closes with ``closeInput()``.
        case open
        /// A pseudo-terminal, which is also standard output and error.
        case terminal(PseudoTerminal)
    }

    /// How a run ended.
    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        var stdoutBytes: Data
        var stderrBytes: Data
        /// Whether the run had to be killed for exceeding its time limit.
        var wasKilled: Bool
        /// When the child's exit was reported (by the process monitor's own thread, so a
        /// busy test pool does not delay it): time a prompt exit by this.
        var exitedAt: ContinuousClock.Instant?
    }

    private let process: Process
    private let input: FileHandle?
    private let stdoutCollector: OutputCollector
    private let stderrCollector: OutputCollector?
    private let exitStatus = ExitStatusBox()

    /// The child's exit status, once it has exited.
    private final class ExitStatusBox: Sendable {
        let value = AnnotatedMutex<(status: Int32, at: ContinuousClock.Instant)?>(nil)
    }

    /// The path of the `wsdump` binary (or another of the package's executables) built next
    /// to the test bundle.
    static func executablePath(_ name: String = "wsdump") throws -> String {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(name) is not built at \(path); run `swift build --build-tests` first")
        }
        return path
    }

    /// Starts wsdump with `arguments`.
    ///
    /// - Parameter environment: Changes to the test's environment; a `nil` value removes the
    ///   variable. `NO_COLOR` is removed unless given, so color decisions are wsdump's own,
    ///   and so are the proxy variables (wsdump honours them), so loopback tests go direct.
    /// - Parameter executable: Another of the package's executables to run instead (e.g.
    ///   `TestServer`).
    init(_ arguments: [String], stdin: Input = .empty, environment: [String: String?] = [:], executable: String = "wsdump") throws {
        signal(SIGPIPE, SIG_IGN)  // writing to a child that exited must not kill the test runner
        process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.executablePath(executable))
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged["NO_COLOR"] = nil
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            merged[name] = nil
        }
        for (name, value) in environment { merged[name] = value }
        process.environment = merged

        var childSide: [FileHandle] = []
        switch stdin {
        case .empty:
            process.standardInput = FileHandle.nullDevice
            self.input = nil
        case .bytes(let text):
            let pipe = Pipe()
            process.standardInput = pipe
            childSide.append(pipe.fileHandleForReading)
            pipe.fileHandleForWriting.write(Data(text.utf8))
            try pipe.fileHandleForWriting.close()
            self.input = nil
        case .open:
            let pipe = Pipe()
            process.standardInput = pipe
            childSide.append(pipe.fileHandleForReading)
            self.input = pipe.fileHandleForWriting
        case .terminal(let terminal):
            let handle = FileHandle(fileDescriptor: terminal.secondary, closeOnDealloc: false)
            process.standardInput = handle
            process.standardOutput = handle
            process.standardError = handle
            self.input = nil
        }
        if case .terminal(let terminal) = stdin {
            stdoutCollector = OutputCollector(descriptor: dup(terminal.primary))
            stderrCollector = nil
        } else {
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            childSide += [output.fileHandleForWriting, errors.fileHandleForWriting]
            stdoutCollector = OutputCollector(descriptor: dup(output.fileHandleForReading.fileDescriptor))
            stderrCollector = OutputCollector(descriptor: dup(errors.fileHandleForReading.fileDescriptor))
            try output.fileHandleForReading.close()
            try errors.fileHandleForReading.close()
        }
        let exitStatus = exitStatus
        process.terminationHandler = { process in
            let at = ContinuousClock.now
            exitStatus.value.withLock { $0 = (process.terminationStatus, at) }
        }
        try process.run()
        for handle in childSide { try? handle.close() }
        if case .terminal(let terminal) = stdin { close(terminal.secondary) }
    }

    /// Standard output so far (for a terminal: everything the child drew).
    var stdout: String { stdoutCollector.text }

    /// Standard error so far (empty for a terminal: it is mixed into ``stdout``).
    var stderr: String { stderrCollector?.text ?? "" }

    /// Writes to the child's standard input (an ``Input/open`` pipe). A child that has
    /// exited takes nothing: the write is dropped, and the test fails on what it printed,
    /// not on a broken pipe that would stop the whole test process.
    func write(_ text: String) {
        try? input?.write(contentsOf: Data(text.utf8))
    }

    /// Ends the child's standard input.
    func closeInput() {
        try? input?.close()
    }

    /// Sends `signal` to the child.
    func send(signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits until standard output (or standard error) contains `text`, for at most `timeout`.
    @discardableResult
    func waitFor(
        _ text: String, inErrors: Bool = false, timeout: Duration = .seconds(8),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Bool {
        let found = await poll(until: .now + timeout) { inErrors ? self.stderr.contains(text) : self.stdout.contains(text) }
        if !found {
            Issue.record("wsdump never printed \(text.debugDescription); stdout: \(stdout.debugDescription), stderr: \(stderr.debugDescription)", sourceLocation: sourceLocation)
        }
        return found
    }

    /// Waits for the child to exit and its output to end; kills it (and records an issue)
    /// after `timeout`.
    func finish(timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation) async -> Result {
        let exited = await poll(until: .now + timeout) {
            self.exitStatus.value.withLock { $0 } != nil && self.stdoutCollector.isFinished && (self.stderrCollector?.isFinished ?? true)
        }
        if !exited {
            Issue.record("wsdump did not exit within \(timeout); stdout: \(stdout.debugDescription), stderr: \(stderr.debugDescription)", sourceLocation: sourceLocation)
            send(signal: SIGKILL)
            _ = await poll(until: .now + .seconds(5)) { self.exitStatus.value.withLock { $0 } != nil }
        }
        let exit = exitStatus.value.withLock { $0 }
        return Result(
            status: exit?.status ?? -1, stdout: stdout, stderr: stderr,
            stdoutBytes: stdoutCollector.data, stderrBytes: stderrCollector?.data ?? Data(), wasKilled: !exited,
            exitedAt: exit?.at)
    }

    /// Checks `condition` every 10 ms until it holds or `deadline` passes.
    private func poll(until deadline: ContinuousClock.Instant, _ condition: () -> Bool) async -> Bool {
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Runs wsdump to its end.
    static func run(
        _ arguments: [String], stdin: Input = .empty, environment: [String: String?] = [:],
        timeout: Duration = .seconds(10), executable: String = "wsdump", sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Result {
        let process = try WSDumpProcess(arguments, stdin: stdin, environment: environment, executable: executable)
        return await process.finish(timeout: timeout, sourceLocation: sourceLocation)
    }
}
