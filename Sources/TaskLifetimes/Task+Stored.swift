extension Task {
    /// Hands this task to `bag`, which cancels it with its other tasks.
    ///
    /// ```swift
    /// Task { await heartbeat.runUntilCancelled() }.stored(in: bag)
    /// ```
    ///
    /// The same as ``TaskBag/add(_:)``.
    ///
    /// - Parameter bag: The bag that owns the task from now on.
    public func stored(in bag: TaskBag) {
        bag.add(self)
    }

    /// Hands this task to `bag` under `id`, unless a task for `id` is already running.
    ///
    /// ```swift
    /// Task { await room.listen() }.stored(in: rooms, id: room.id)
    /// ```
    ///
    /// The same as ``IdentifiableTaskBag/add(_:id:)``: a task that is not
    /// added is cancelled, so there is at most one task per id.
    ///
    /// - Parameters:
    ///   - bag: The bag that owns the task from now on.
    ///   - id: The id of the work.
    /// - Returns: `true` if the task was added, `false` if it was cancelled
    ///   because `id` was already running.
    @discardableResult
    public func stored<ID>(in bag: IdentifiableTaskBag<ID>, id: ID) -> Bool {
        bag.add(self, id: id)
    }
}
