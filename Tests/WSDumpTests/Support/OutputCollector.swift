import LibWebSocketsLoop
import Foundation
import Glibc
import SynchronizationSupport
import WebSocketStreams

/// Collects everything a file descriptor yields until end of file, on a thread of its own
/// (the reads block), so tests can look at the output while the process runs.
final class OutputCollector: Sendable {
    private struct State: Sendable {
        var data = Data()
        var isFinished = false
    }

    private let state = AnnotatedMutex(State())

    /// Starts reading `descriptor`; it is closed once reading ends.
    init(descriptor: Int32) {
        DetachedThread.run(name: "test-collector") { [self] in
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    let chunk = Data(buffer[..<count])
                    state.withLock { $0.data.append(chunk) }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break  // end of file, or EIO once a pseudo-terminal's other side is closed
                }
            }
            close(descriptor)
            state.withLock { $0.isFinished = true }
        }
    }

    /// Everything read so far.
    var data: Data { state.withLock { $0.data } }

    /// Everything read so far, as UTF-8 text.
    var text: String { String(decoding: data, as: UTF8.self) }

    /// Whether the end of file was reached.
    var isFinished: Bool { state.withLock { $0.isFinished } }
}
