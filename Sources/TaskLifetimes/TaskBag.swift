import Synchronization
import SynchronizationSupport

/// A bag of tasks that are cancelled together: by ``cancel()`` or when the bag is released.
///
/// Give an owner (an app, a session, a screen) a `TaskBag` and start its
/// long-running work in it; the work then lives exactly as long as the owner.
///
/// ```swift
/// final class ChatScreen: Sendable {
///     private let tasks = TaskBag()
///
///     init(messages: AsyncStream<String>) {
///         tasks.addTask {
///             for await message in messages { print(message) }
///         }
///     }
/// }   // Releasing the screen cancels the loop.
/// ```
///
/// A task that finishes on its own is removed from the bag, so a long-lived bag
/// does not grow. The bag's tasks capture the bag weakly: they never keep it alive.
///
/// `TaskBag` is `Sendable`; every method may be called from any task or thread at once.
public final class TaskBag: Sendable {
    private struct State {
        var lastKey: UInt64 = 0
        var entries = TaskEntries<UInt64>()

        /// Reserves an entry under a key that has never been used.
        mutating func reserveNewEntry() -> (key: UInt64, token: UInt64) {
            lastKey &+= 1
            guard let token = entries.reserve(lastKey) else {
                preconditionFailure("TaskBag keys are never reused")
            }
            return (lastKey, token)
        }
    }

    private let state = AnnotatedMutex(State())

    /// Creates an empty bag.
    public init() {}

    deinit {
        let cancellers = state.withLock { $0.entries.removeAll() }
        for cancel in cancellers { cancel() }
    }

    /// The number of tasks in the bag (started and not yet finished or cancelled).
    var count: Int { state.withLock { $0.entries.count } }

    /// Starts `operation` in a new task owned by the bag.
    ///
    /// ```swift
    /// bag.addTask { await heartbeat.runUntilCancelled() }
    /// ```
    ///
    /// - Parameters:
    ///   - priority: The priority of the new task, or `nil` for the default.
    ///   - operation: The work; it should return promptly once cancelled.
    public func addTask(
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async -> Void
    ) {
        makeTask(priority: priority, operation: operation)
    }

    /// ``addTask(priority:operation:)`` returning the started task; for tests.
    @discardableResult
    func makeTask(
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async -> Void
    ) -> Task<Void, Never> {
        let (key, token) = state.withLock { $0.reserveNewEntry() }
        let task = Task(priority: priority) { [weak self] in
            await operation()
            self?.finished(key: key, token: token)
        }
        let attached = state.withLock {
            $0.entries.attach({ task.cancel() }, to: key, token: token)
        }
        // Not attached: `cancel()` emptied the bag while the task was being
        // created (or it already finished, which makes this a no-op).
        if !attached { task.cancel() }
        return task
    }

    /// Adds an already running task to the bag, which from now on cancels it with the others.
    ///
    /// ```swift
    /// bag.add(Task { await poller.runUntilCancelled() })
    /// ```
    ///
    /// Also available as `Task { ... }.stored(in: bag)`. The task is removed
    /// from the bag when it finishes; a small low-priority task waits for that.
    ///
    /// - Parameter task: The task to own.
    public func add<Success, Failure>(_ task: Task<Success, Failure>) {
        insert(task)
    }

    /// ``add(_:)`` returning the task that removes `task` once it finished; for tests.
    @discardableResult
    func insert<Success, Failure>(_ task: Task<Success, Failure>) -> Task<Void, Never> {
        let (key, token) = state.withLock { state in
            let (key, token) = state.reserveNewEntry()
            _ = state.entries.attach({ task.cancel() }, to: key, token: token)
            return (key, token)
        }
        return Task.detached(priority: .low) { [weak self] in
            _ = await task.result
            self?.finished(key: key, token: token)
        }
    }

    /// Cancels every task in the bag and empties it.
    ///
    /// The bag stays usable: tasks added afterwards run normally. `cancel()`
    /// does not wait for the cancelled tasks to return.
    public func cancel() {
        let cancellers = state.withLock { $0.entries.removeAll() }
        for cancel in cancellers { cancel() }
    }

    private func finished(key: UInt64, token: UInt64) {
        state.withLock { $0.entries.remove(key, token: token) }
    }
}
