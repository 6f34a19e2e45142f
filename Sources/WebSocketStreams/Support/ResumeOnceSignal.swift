import Synchronization
import SynchronizationSupport

/// A one-shot signal a task can wait for with a time limit: ``signal()`` may come from
/// any thread, before or during the wait, and at most once has an effect.
final class ResumeOnceSignal: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Void, Never>)
        case signalled
    }

    private let state = AnnotatedMutex(State.idle)

    /// Fires the signal; later calls do nothing.
    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            defer { state = .signalled }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiter?.resume()
    }

    /// Returns when the signal fires or `limit` has passed, whichever is first.
    func wait(atMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let fired: Bool = self.state.withLock { state in
                        if case .signalled = state { return true }
                        state = .waiting(continuation)
                        return false
                    }
                    if fired { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                self.signal()
            }
            await group.next()
            group.cancelAll()
        }
    }
}
