import Foundation

/// Runs blocking work (reads of standard input or a file, writes to standard output) on a
/// thread of its own, so it never holds one of the few threads Swift's cooperative pool has.
enum BlockingThread {
    /// Starts `body` on a new thread named `name`. Returns `false` if no thread could be
    /// started (`body` then never runs).
    @discardableResult
    static func run(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
        return true
    }
}
