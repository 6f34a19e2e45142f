/// The bookkeeping shared by ``TaskBag`` and ``IdentifiableTaskBag``.
///
/// A plain value type: the bags keep it inside a `Mutex` and only ever mutate
/// it while holding that lock. Every method is synchronous and runs no user
/// code; cancelling happens later, after the lock is released, with the
/// closures these methods hand back.
///
/// An entry is added in two steps so a task that finishes before its handle is
/// stored cannot be resurrected:
/// 1. ``reserve(_:)`` records the key with a fresh token and no canceller;
/// 2. the bag creates the task, then ``attach(_:to:token:)`` stores the
///    canceller only if the same reservation is still there. If the task
///    already finished (and removed itself) or was cancelled in between, the
///    attach fails and the bag cancels the task itself (a no-op if finished).
struct TaskEntries<Key: Hashable & Sendable> {
    /// Cancels one task. Always a `Task.cancel()` call, never user code directly.
    typealias Canceller = @Sendable () -> Void

    private struct Entry {
        let token: UInt64
        var canceller: Canceller?
    }

    private var entries: [Key: Entry] = [:]
    private var nextToken: UInt64 = 0

    /// The number of reserved or running entries.
    var count: Int { entries.count }

    /// Whether `key` has a reserved or running entry.
    func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// Reserves `key` and returns the reservation's token, or `nil` if `key` is taken.
    mutating func reserve(_ key: Key) -> UInt64? {
        guard entries[key] == nil else { return nil }
        nextToken &+= 1
        entries[key] = Entry(token: nextToken, canceller: nil)
        return nextToken
    }

    /// Stores `canceller` in the reservation `token` of `key`.
    ///
    /// Returns `false` if that reservation is gone (finished or cancelled);
    /// the caller must then cancel the task itself.
    mutating func attach(_ canceller: @escaping Canceller, to key: Key, token: UInt64) -> Bool {
        guard entries[key]?.token == token else { return false }
        entries[key]?.canceller = canceller
        return true
    }

    /// Removes the entry of `key` only if it still is reservation `token`.
    ///
    /// Called when a task finishes, so a newer task with the same key is kept.
    mutating func remove(_ key: Key, token: UInt64) {
        if entries[key]?.token == token {
            entries[key] = nil
        }
    }

    /// Removes the entry of `key` and returns its canceller, if it has one yet.
    mutating func remove(_ key: Key) -> Canceller? {
        entries.removeValue(forKey: key)?.canceller
    }

    /// Removes every entry and returns the cancellers of those that have one.
    mutating func removeAll() -> [Canceller] {
        let cancellers = entries.values.compactMap(\.canceller)
        entries = [:]
        return cancellers
    }
}
