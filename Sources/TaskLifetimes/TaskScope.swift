import Synchronization
import SynchronizationSupport

/// SwiftUI's `.task(id:)` for any owner: one operation at a time, restarted when the id changes.
///
/// ```swift
/// let session = TaskScope<User.ID?>()
///
/// // On every login and logout:
/// await session.task(id: user?.id) {
///     guard let user else { return }
///     await UserSession(user).runUntilCancelled()
/// }
/// ```
///
/// - The same id again: nothing happens.
/// - A new id: the running operation is cancelled, the scope waits until it has
///   really returned, and only then does the new operation start. The old and
///   the new operation never run at once, however many tasks call
///   ``task(id:priority:operation:)`` concurrently; when calls race, the one the
///   scope records last wins and the operations of the others never start.
/// - ``cancel()`` ends the operation; releasing the scope cancels it too.
///
/// `TaskScope` is `Sendable`; every method may be called from any task or thread at once.
public final class TaskScope<ID: Equatable & Sendable>: Sendable {
    private struct State {
        /// The id of the latest request; `nil` before the first and after `cancel()`.
        var id: ID?
        /// Bumped by every switch and by `cancel()`; an operation runs only if
        /// its switch is still the latest when its turn comes.
        var generation: UInt64 = 0
        /// The task of the latest switch. Each switch's task first waits for
        /// the previous one, so waiting for the tail waits for all of them.
        var tail: Task<Void, Never>?
    }

    /// What a call to `task(id:)` decided under the lock.
    private enum Decision {
        case unchanged
        case switched(previous: Task<Void, Never>?)
    }

    private let state = AnnotatedMutex(State())

    /// Creates a scope with no operation running.
    public init() {}

    deinit {
        // Earlier tasks were cancelled by the switches that replaced them.
        state.withLock { $0.tail }?.cancel()
    }

    /// The id of the latest operation requested, or `nil` if none is (before the
    /// first call and after ``cancel()``).
    public var id: ID? { state.withLock { $0.id } }

    /// Runs `operation` for `id`, replacing the operation of another id.
    ///
    /// ```swift
    /// await scope.task(id: user.id) { await logic.runUntilCancelled() }
    /// ```
    ///
    /// If `id` equals the current id, nothing happens. Otherwise the current
    /// operation is cancelled, and `operation` starts in a new task once the
    /// current one has returned. This method returns once `operation` is about
    /// to start (or once a newer call has superseded this one, or as soon as the
    /// calling task is cancelled); it does not wait for `operation` to end.
    ///
    /// - Parameters:
    ///   - id: The id the operation belongs to.
    ///   - priority: The priority of the new task, or `nil` for the default.
    ///   - operation: The work; it should return promptly once cancelled.
    public func task(
        id: ID,
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async -> Void
    ) async {
        let (started, startedContinuation) = AsyncStream<Never>.makeStream()
        let decision = state.withLock { state -> Decision in
            if let current = state.id, current == id { return .unchanged }
            state.id = id
            state.generation &+= 1
            let generation = state.generation
            let previous = state.tail
            // Creating a task runs none of its code, so it is safe under the
            // lock; doing it here makes "read the tail, become the tail" atomic.
            state.tail = Task(priority: priority) { [weak self] in
                // `previous` waited for its own predecessor, and so on: once it
                // has returned, every older operation has returned too.
                await previous?.value
                // Decide before telling the caller: once `task(id:)` has returned, the
                // operation runs, even if `cancel()` comes at once (it then starts cancelled).
                let runs = (self?.isLatest(generation) ?? false) && !Task.isCancelled
                startedContinuation.finish()
                guard runs else { return }
                await operation()
            }
            return .switched(previous: previous)
        }
        guard case .switched(let previous) = decision else { return }
        // Cancel outside the lock: cancellation handlers are user code.
        previous?.cancel()
        for await _ in started {}
    }

    /// Cancels the running operation and waits until it has returned.
    ///
    /// Afterwards ``id`` is `nil`, and any id starts a new operation.
    public func cancel() async {
        let tail = state.withLock { state in
            state.id = nil
            state.generation &+= 1
            return state.tail
        }
        tail?.cancel()
        await tail?.value
    }

    private func isLatest(_ generation: UInt64) -> Bool {
        state.withLock { $0.generation == generation }
    }
}
