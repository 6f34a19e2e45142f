import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `Mutex` whose critical sections ThreadSanitizer can see.
///
/// On Linux a contended `Synchronization.Mutex` hands the lock over through the kernel (a
/// futex) inside the uninstrumented standard library, so ThreadSanitizer never learns that
/// two critical sections are ordered and reports races on the state they protect. When the
/// ThreadSanitizer runtime is in the process, every critical section here is also announced
/// to it (`__tsan_acquire` / `__tsan_release` on an address owned by this lock). Otherwise
/// the cost is one load of a cached pointer per critical section.
///
/// `withLock` is inlinable so each call site is specialized for its value type: the lock
/// sits on every message's path, where an unspecialized generic call (with its runtime
/// metadata lookups) would cost more than the lock. The type is `public` for that reason
/// only: Swift 6.3 does not inline `@inlinable` members of `package` types across modules.
/// This module is support code of this package, not API.
public struct AnnotatedMutex<Value: ~Copyable>: ~Copyable {
    @usableFromInline
    let mutex: Mutex<Value>
    /// The address ThreadSanitizer knows this lock by; 0 when ThreadSanitizer is not loaded.
    @usableFromInline
    let syncAddress: UInt
    #if DEBUG
    /// Where the lock stands in the lock order (checked in debug builds only).
    @usableFromInline
    let rank: LockRank
    #endif

    /// A lock protecting `initialValue`, at `rank` in the lock order (a leaf unless given).
    public init(_ initialValue: consuming sending Value, rank: LockRank = .leaf) {
        mutex = Mutex(initialValue)
        syncAddress = ThreadSanitizerAnnotations.isActive ? UInt(bitPattern: malloc(1)) : 0
        #if DEBUG
        self.rank = rank
        #endif
    }

    deinit {
        if syncAddress != 0 { free(UnsafeMutableRawPointer(bitPattern: syncAddress)) }
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = syncAddress
        #if DEBUG
        LockOrderCheck.willTake(rank)
        defer { LockOrderCheck.released(rank) }
        #endif
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            if address != 0 { ThreadSanitizerAnnotations.acquire(address) }
            defer { if address != 0 { ThreadSanitizerAnnotations.release(address) } }
            return try body(&value)
        }
    }

    /// Runs `body` with exclusive access to the value if the lock is free now; `nil`
    /// without waiting when another thread holds it. Like `withLock`, never call it on a
    /// thread that holds the lock already (the standard library stops the process).
    @inlinable
    public borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        let address = syncAddress
        return try mutex.withLockIfAvailable { (value: inout sending Value) throws(E) -> sending Result in
            if address != 0 { ThreadSanitizerAnnotations.acquire(address) }
            defer { if address != 0 { ThreadSanitizerAnnotations.release(address) } }
            #if DEBUG
            LockOrderCheck.took(rank)
            defer { LockOrderCheck.released(rank) }
            #endif
            return try body(&value)
        }
    }
}

extension AnnotatedMutex: Sendable where Value: ~Copyable {}

/// Calls ThreadSanitizer's `__tsan_acquire` / `__tsan_release` when its runtime is loaded.
public enum ThreadSanitizerAnnotations {
    private typealias Annotation = @convention(c) (UnsafeMutableRawPointer?) -> Void

    private static let acquireFunction = address(of: "__tsan_acquire")
    private static let releaseFunction = address(of: "__tsan_release")

    /// Whether the process runs under ThreadSanitizer.
    public static var isActive: Bool { acquireFunction != 0 }

    @usableFromInline
    static func acquire(_ lock: UInt) { call(acquireFunction, lock) }
    @usableFromInline
    static func release(_ lock: UInt) { call(releaseFunction, lock) }

    private static func call(_ function: UInt, _ lock: UInt) {
        guard lock != 0, let pointer = UnsafeRawPointer(bitPattern: function) else { return }
        unsafeBitCast(pointer, to: Annotation.self)(UnsafeMutableRawPointer(bitPattern: lock))
    }

    private static func address(of symbol: String) -> UInt {
        #if canImport(Glibc)
        // A nil handle is RTLD_DEFAULT: search the whole process.
        return UInt(bitPattern: dlsym(nil, symbol))
        #else
        return 0  // elsewhere Mutex uses a lock ThreadSanitizer understands
        #endif
    }
}
