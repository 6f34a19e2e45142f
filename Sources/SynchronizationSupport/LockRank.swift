#if canImport(Glibc)
import Glibc
#endif

/// Where a lock stands in the package's lock order. A thread that holds a lock may take
/// another only if the other's rank is greater, so no two threads can each wait for a lock
/// the other holds. Debug builds check it each time a lock is taken, and stop the process
/// with both locks' names when the order is broken; release builds keep no rank at all.
///
/// A lock created without a rank is a leaf (``leaf``): nothing else may be taken while it
/// is held. Each package module lists its ranked locks in one place.
public struct LockRank: Sendable {
    /// The position in the order: locks are taken in increasing value.
    public let value: Int
    /// The lock's name in a failure message.
    public let name: StaticString

    public init(_ value: Int, _ name: StaticString) {
        self.value = value
        self.name = name
    }

    /// A lock that is held alone: no other lock is taken while it is held.
    public static let leaf = LockRank(.max, "a leaf lock")
}

#if DEBUG
/// The locks each thread holds, for debug builds' lock order check.
@usableFromInline
enum LockOrderCheck {
    /// One thread's held locks, innermost last.
    final class HeldLocks {
        var ranks: [LockRank] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<HeldLocks>.fromOpaque(pointer).release() }
        }
        return key
    }()

    private static var current: HeldLocks {
        if let pointer = pthread_getspecific(key) { return Unmanaged<HeldLocks>.fromOpaque(pointer).takeUnretainedValue() }
        let held = HeldLocks()
        pthread_setspecific(key, Unmanaged.passRetained(held).toOpaque())
        return held
    }

    /// The calling thread is about to wait for a lock of `rank`: every lock it holds must rank lower.
    @usableFromInline
    static func willTake(_ rank: LockRank) {
        let held = current
        if let conflict = held.ranks.first(where: { $0.value >= rank.value }) {
            preconditionFailure("lock order broken: \(rank.name) taken while holding \(conflict.name)")
        }
        held.ranks.append(rank)
    }

    /// A lock taken without waiting (it cannot deadlock): recorded, not checked.
    @usableFromInline
    static func took(_ rank: LockRank) {
        current.ranks.append(rank)
    }

    @usableFromInline
    static func released(_ rank: LockRank) {
        let held = current
        if let index = held.ranks.lastIndex(where: { $0.value == rank.value }) { held.ranks.remove(at: index) }
    }
}
#endif
