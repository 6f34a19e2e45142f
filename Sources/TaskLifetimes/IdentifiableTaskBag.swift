import Synchronization
import SynchronizationSupport

/// A bag that runs at most one task per id, like a set of named jobs.
///
/// Starting an id that is already running is ignored, which makes it safe to
/// "start" the same work from many places (every tap, every reconnect):
///
/// ```swift
/// let downloads = IdentifiableTaskBag<String>()
///
/// downloads.startTask(id: file.name) { await file.download() }  // true: started
/// downloads.startTask(id: file.name) { await file.download() }  // false: already running
/// downloads.cancel(id: file.name)
/// ```
///
/// A task that finishes is removed, so its id can be started again. Cancelling
/// an id (``cancel(id:)``, ``cancel()``) removes it at once, even while the
/// cancelled task is still winding down; use ``TaskScope`` when the old and
/// the new work must never overlap. Releasing the bag cancels every task; the
/// tasks capture the bag weakly and never keep it alive.
///
/// `IdentifiableTaskBag` is `Sendable`; every method may be called from any
/// task or thread at once.
public final class IdentifiableTaskBag<ID: Hashable & Sendable>: Sendable {
    private let entries = AnnotatedMutex(TaskEntries<ID>())

    /// Creates an empty bag.
    public init() {}

    deinit {
        let cancellers = entries.withLock { $0.removeAll() }
        for cancel in cancellers { cancel() }
    }

    /// Starts `operation` for `id` unless a task for `id` is already running.
    ///
    /// ```swift
    /// bag.startTask(id: room.id) { await room.listen() }
    /// ```
    ///
    /// - Parameters:
    ///   - id: The id of the work.
    ///   - priority: The priority of the new task, or `nil` for the default.
    ///   - operation: The work; it should return promptly once cancelled.
    /// - Returns: `true` if the task was started, `false` if `id` was already
    ///   running (then `operation` is not called).
    @discardableResult
    public func startTask(
        id: ID,
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async -> Void
    ) -> Bool {
        makeTask(id: id, priority: priority, operation: operation) != nil
    }

    /// ``startTask(id:priority:operation:)`` returning the started task; for tests.
    func makeTask(
        id: ID,
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable () async -> Void
    ) -> Task<Void, Never>? {
        // Reserve the id first: the task may finish before its handle is stored.
        guard let token = entries.withLock({ $0.reserve(id) }) else { return nil }
        let task = Task(priority: priority) { [weak self] in
            await operation()
            self?.finished(id: id, token: token)
        }
        let attached = entries.withLock {
            $0.attach({ task.cancel() }, to: id, token: token)
        }
        // Not attached: the id was cancelled while the task was being created
        // (or the task already finished, which makes this a no-op).
        if !attached { task.cancel() }
        return task
    }

    /// Adds an already running task under `id`, unless `id` is already running.
    ///
    /// ```swift
    /// bag.add(Task { await room.listen() }, id: room.id)
    /// ```
    ///
    /// Also available as `Task { ... }.stored(in: bag, id: id)`. To keep at most
    /// one task per id, a task that is not added is cancelled. An added task is
    /// removed when it finishes; a small low-priority task waits for that.
    ///
    /// - Parameters:
    ///   - task: The task to own.
    ///   - id: The id of the work.
    /// - Returns: `true` if the task was added, `false` if `id` was already
    ///   running (then `task` has been cancelled).
    @discardableResult
    public func add<Success, Failure>(_ task: Task<Success, Failure>, id: ID) -> Bool {
        insert(task, id: id) != nil
    }

    /// ``add(_:id:)`` returning the task that removes `task` once it finished
    /// (`nil` if `task` was not added); for tests.
    func insert<Success, Failure>(_ task: Task<Success, Failure>, id: ID) -> Task<Void, Never>? {
        let token = entries.withLock { entries -> UInt64? in
            guard let token = entries.reserve(id) else { return nil }
            _ = entries.attach({ task.cancel() }, to: id, token: token)
            return token
        }
        guard let token else {
            task.cancel()
            return nil
        }
        return Task.detached(priority: .low) { [weak self] in
            _ = await task.result
            self?.finished(id: id, token: token)
        }
    }

    /// Whether a task for `id` is running (started and not finished or cancelled).
    public func isRunning(id: ID) -> Bool {
        entries.withLock { $0.contains(id) }
    }

    /// Cancels the task for `id`, if any, and frees `id` to be started again.
    public func cancel(id: ID) {
        let cancel = entries.withLock { $0.remove(id) }
        cancel?()
    }

    /// Cancels every task and empties the bag. The bag stays usable.
    public func cancel() {
        let cancellers = entries.withLock { $0.removeAll() }
        for cancel in cancellers { cancel() }
    }

    /// The number of running tasks; for tests.
    var count: Int { entries.withLock { $0.count } }

    private func finished(id: ID, token: UInt64) {
        entries.withLock { $0.remove(id, token: token) }
    }
}
