import SynchronizationSupport

/// Something that happens once and that any number of tasks can wait for: that a task owned
/// by a `TaskBag` has returned.
final class Completion: Sendable {
    private struct State {
        var isComplete = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = AnnotatedMutex(State())

    /// Marks it complete and resumes every waiter (outside the lock); later calls do nothing.
    func complete() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isComplete else { return [] }
            state.isComplete = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``complete()`` has been called (at once if it has been already).
    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let isComplete = state.withLock { state -> Bool in
                if !state.isComplete { state.waiters.append(waiter) }
                return state.isComplete
            }
            if isComplete { waiter.resume() }
        }
    }
}
