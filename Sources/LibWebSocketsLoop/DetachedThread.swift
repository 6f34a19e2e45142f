import CLibWebSockets
import Glibc

/// Runs blocking work on a thread of its own.
///
/// Blocking calls (`getaddrinfo`, blocking socket I/O) must not run on Swift's
/// cooperative pool or on Dispatch's global queues: on Linux both share a pool about as
/// wide as the machine has cores, so one blocked call stalls unrelated tasks.
package enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes are kept).
    /// Returns `false` if the thread could not be created (`body` then never runs).
    @discardableResult
    package static func run(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Box(name: name, body: body))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            wss_set_thread_name(String(box.name.prefix(15)))
            box.body()
            return nil
        }, box.toOpaque())
        guard result == 0 else {
            box.release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    private final class Box: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
