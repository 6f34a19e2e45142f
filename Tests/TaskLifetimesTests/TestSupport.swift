import Synchronization
import SynchronizationSupport
@testable import TaskLifetimes

/// Events sent from any task, awaited in order by the test: the tests
/// synchronise on these, never on sleeps.
final class Events<Element: Sendable>: Sendable {
    private let stream: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    func send(_ element: Element) {
        continuation.yield(element)
    }

    /// Waits for the next `count` events (fewer only if the test is cancelled).
    func next(_ count: Int) async -> [Element] {
        var iterator = stream.makeAsyncIterator()
        var elements: [Element] = []
        while elements.count < count, let element = await iterator.next() {
            elements.append(element)
        }
        return elements
    }

    /// Waits for the next event.
    func next() async -> Element? {
        await next(1).first
    }

    /// Waits until `element` arrives, skipping others.
    func wait(for element: Element) async where Element: Equatable {
        var iterator = stream.makeAsyncIterator()
        while let next = await iterator.next(), next != element {}
    }
}

/// A stream that never yields nor finishes; it reports how its iteration ended.
final class NeverEndingStream: Sendable {
    let stream: AsyncStream<Int>
    private let continuation: AsyncStream<Int>.Continuation

    init(onTermination: @escaping @Sendable (AsyncStream<Int>.Continuation.Termination) -> Void) {
        (stream, continuation) = AsyncStream.makeStream()
        continuation.onTermination = onTermination
    }

    /// Iterates the stream: returns only when the current task is cancelled.
    func iterate() async {
        for await _ in stream {}
    }
}

// The locks below are AnnotatedMutex, whose critical sections ThreadSanitizer can see.

/// A counter that can be shared between tasks.
final class Counter: Sendable {
    private let value = AnnotatedMutex(0)

    var current: Int { value.withLock { $0 } }

    @discardableResult
    func increment() -> Int { value.withLock { $0 += 1; return $0 } }
}

/// Lets the current task yield `count` times: a cleanup that takes a while.
func yieldRepeatedly(_ count: Int) async {
    for _ in 0..<count { await Task.yield() }
}

/// A value behind a `Mutex`, shareable between tasks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: AnnotatedMutex<Value>

    init(_ value: Value) {
        mutex = AnnotatedMutex(value)
    }

    var value: Value { mutex.withLock { $0 } }

    @discardableResult
    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

extension Task where Failure == Never {
    /// The task's value. Cancelling the waiting task (as a test's time limit
    /// does) cancels this task too, so a broken test fails instead of hanging.
    var cancellableValue: Success {
        get async {
            await withTaskCancellationHandler {
                await value
            } onCancel: {
                cancel()
            }
        }
    }
}

/// A gate that tasks wait at, ignoring cancellation, until the test opens it.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = AnnotatedMutex(State())

    /// Suspends until ``open()`` is called; cancellation does not end the wait.
    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Lets every current and future waiter through.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
