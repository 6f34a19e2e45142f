import Dispatch
import Glibc
import WebSocketStreams

/// Reads standard input on a thread of its own (reads block), handing what it reads to
/// the session.
enum StandardInput {
    /// Lets the reading thread run at most ``limit`` lines ahead of the sender, so a large
    /// piped file is not read into memory faster than it can be sent.
    final class Credits: Sendable {
        /// Lines that may be read before earlier ones have been sent.
        static let limit = 64

        private let semaphore = DispatchSemaphore(value: Credits.limit)

        /// Takes a credit, blocking the reading thread until one is free.
        fileprivate func take() { semaphore.wait() }

        /// Returns a credit: a line was sent (or dropped).
        func giveBack() { semaphore.signal() }
    }

    /// Reads lines until end of input: `onLine` for each, then `onEnd` once.
    static func readLines(
        credits: Credits, onLine: @escaping @Sendable ([UInt8]) -> Void, onEnd: @escaping @Sendable () -> Void
    ) {
        let started = BlockingThread.run(name: "wsdump-stdin") {
            var splitter = LineSplitter()
            readChunks { chunk in
                for line in splitter.feed(chunk) {
                    credits.take()
                    onLine(line)
                }
            }
            if let last = splitter.finish() {
                credits.take()
                onLine(last)
            }
            onEnd()
        }
        if !started { onEnd() }
    }

    /// Reads raw bytes (keys, in raw mode) until end of input: `onBytes` for each read,
    /// then `onEnd` once.
    static func readBytes(onBytes: @escaping @Sendable ([UInt8]) -> Void, onEnd: @escaping @Sendable () -> Void) {
        let started = BlockingThread.run(name: "wsdump-keys") {
            readChunks(onBytes)
            onEnd()
        }
        if !started { onEnd() }
    }

    /// Calls `body` with each chunk `read` returns until end of input or an error.
    private static func readChunks(_ body: ([UInt8]) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count > 0 {
                body(Array(buffer[..<count]))
            } else if count < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
