/// A value that only its event loop's thread touches, without a lock. Every access is checked
/// against the thread, in release builds too (as swift-nio's `NIOLoopBound` does), so a change
/// that reaches loop state from a task stops there instead of racing. The check is a relaxed
/// atomic load and a thread comparison; paired release runs of W1, W2 and W4 with and without
/// it measured no difference.
// @unchecked: confined to one loop thread; `preconditionOnLoop` checks every access.
package final class LoopBound<Value>: @unchecked Sendable {
    private var storage: Value
    private let thread: EventLoopThread

    package init(_ value: Value, on thread: EventLoopThread) {
        storage = value
        self.thread = thread
    }

    package var value: Value {
        get {
            preconditionOnLoop()
            return storage
        }
        _modify {
            preconditionOnLoop()
            yield &storage
        }
    }

    @inline(__always)
    private func preconditionOnLoop() {
        precondition(thread.isCurrent, "loop-bound state touched off its event loop's thread")
    }
}
