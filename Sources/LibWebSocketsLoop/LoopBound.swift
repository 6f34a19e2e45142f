/// A value that only its event loop's thread touches, without a lock. Debug builds check
/// every access against the thread (as swift-nio's `NIOLoopBound` does), so a change that
/// reaches loop state from a task fails its tests instead of racing.
// @unchecked: confined to one loop thread; `assertOnLoop` checks it in debug builds.
package final class LoopBound<Value>: @unchecked Sendable {
    private var storage: Value
    private let thread: EventLoopThread

    package init(_ value: Value, on thread: EventLoopThread) {
        storage = value
        self.thread = thread
    }

    package var value: Value {
        get {
            assertOnLoop()
            return storage
        }
        _modify {
            assertOnLoop()
            yield &storage
        }
    }

    @inline(__always)
    private func assertOnLoop() {
        assert(thread.isCurrent, "loop-bound state touched off its event loop's thread")
    }
}
