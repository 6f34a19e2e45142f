import Foundation
import Glibc
import SynchronizationSupport

/// The built `WebSocketServiceExample` binary, run as a child process whose output lines
/// and exit the test awaits.
///
/// ```swift
/// let example = try ServiceExampleProcess([server.url(path: "/echo")])
/// defer { example.killIfRunning() }
/// example.send(signal: SIGTERM)
/// #expect(try await example.exit() == .exited(0))
/// ```
final class ServiceExampleProcess: Sendable {
    /// How the child ended.
    enum Exit: Sendable, Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
    }

    private let process: Process
    private let lines: AsyncStream<String>
    private let exits: AsyncStream<Exit>
    private let transcript = AnnotatedMutex<[String]>([])

    /// The path of the example binary built next to the test bundle.
    static func executablePath() throws -> String {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let path = URL(fileURLWithPath: testBinary).deletingLastPathComponent()
            .appendingPathComponent("WebSocketServiceExample").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("WebSocketServiceExample is not built at \(path); run `swift build --build-tests` first")
        }
        return path
    }

    /// Starts the example with `arguments`; its standard output and error are read as lines.
    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.executablePath())
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output

        let (exits, exitSink) = AsyncStream.makeStream(of: Exit.self, bufferingPolicy: .unbounded)
        self.exits = exits
        process.terminationHandler = { process in
            let status = process.terminationStatus
            exitSink.yield(process.terminationReason == .exit ? .exited(status) : .signalled(status))
            exitSink.finish()
        }
        try process.run()
        try output.fileHandleForWriting.close()  // the child has its own copy: end of file comes when it exits

        let (lines, lineSink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        self.lines = lines
        let descriptor = dup(output.fileHandleForReading.fileDescriptor)
        try output.fileHandleForReading.close()
        // The reads block, so they get a thread of their own.
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            func emit(_ line: ArraySlice<UInt8>) {
                let text = String(decoding: line, as: UTF8.self)
                transcript.withLock { $0.append(text) }
                lineSink.yield(text)
            }
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    emit(pending[..<newline])
                    pending.removeSubrange(...newline)
                }
            }
            if !pending.isEmpty { emit(pending[...]) }
            close(descriptor)
            lineSink.finish()
        }
    }

    /// Everything the child has written so far, one line per element.
    var output: [String] { transcript.withLock { $0 } }

    /// Sends `signal` to the child.
    func send(signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Kills the child if it is still running (for a test that ends early).
    func killIfRunning() {
        if process.isRunning { send(signal: SIGKILL) }
    }

    /// Waits for the next output line that contains `text`, for at most `limit`.
    @discardableResult
    func line(containing text: String, within limit: Duration = .seconds(5)) async throws -> String {
        do {
            return try await withTimeout(limit, waitingFor: "a line with \(text.debugDescription)") { [lines] in
                for await line in lines where line.contains(text) { return line }
                throw TestFailure("the output ended without a line with \(text.debugDescription)")
            }
        } catch {
            throw TestFailure("\(error); output: \(output)")
        }
    }

    /// Waits for the child to end, for at most `limit`.
    func exit(within limit: Duration = .seconds(5)) async throws -> Exit {
        do {
            return try await withTimeout(limit, waitingFor: "the example's exit") { [exits] in
                for await exit in exits { return exit }
                throw TestFailure("no exit status")
            }
        } catch {
            throw TestFailure("\(error); output: \(output)")
        }
    }
}
