import Synchronization

#if os(Linux)
import Glibc
#endif

extension Mutex {
    /// `withLock(_:)`, made visible to ThreadSanitizer.
    ///
    /// On Linux a contended `Mutex` is handed over by the kernel (a PI futex),
    /// which ThreadSanitizer cannot see: it then reports false races on the
    /// state inside the lock. When the ThreadSanitizer runtime is loaded, this
    /// method tells it that the critical section acquires and releases a lock
    /// identified by `owner`, the object holding the mutex. Otherwise it is
    /// `withLock(_:)` plus one check of a cached pointer.
    ///
    /// - Parameters:
    ///   - owner: The object that stores this mutex; identifies the lock.
    ///   - body: The critical section.
    borrowing func withLock<Result, E: Error>(
        owner: AnyObject,
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let lock = Unmanaged.passUnretained(owner).toOpaque()
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            ThreadSanitizerAnnotations.acquire(lock)
            defer { ThreadSanitizerAnnotations.release(lock) }
            return try body(&value)
        }
    }
}

/// Calls ThreadSanitizer's `__tsan_acquire` and `__tsan_release` when its
/// runtime is in the process, and does nothing otherwise.
enum ThreadSanitizerAnnotations {
    private typealias Annotation = @convention(c) (UnsafeMutableRawPointer?) -> Void

    // Addresses rather than pointers, so they are Sendable; 0 when absent.
    private static let acquireAddress = address(of: "__tsan_acquire")
    private static let releaseAddress = address(of: "__tsan_release")

    /// Whether the ThreadSanitizer runtime was found.
    static var isActive: Bool { acquireAddress != 0 }

    static func acquire(_ lock: UnsafeMutableRawPointer) {
        call(acquireAddress, lock)
    }

    static func release(_ lock: UnsafeMutableRawPointer) {
        call(releaseAddress, lock)
    }

    private static func call(_ address: UInt, _ lock: UnsafeMutableRawPointer) {
        guard let function = UnsafeRawPointer(bitPattern: address) else { return }
        unsafeBitCast(function, to: Annotation.self)(lock)
    }

    private static func address(of symbol: String) -> UInt {
        #if os(Linux)
        // A nil handle is RTLD_DEFAULT: search the whole process.
        return UInt(bitPattern: dlsym(nil, symbol))
        #else
        // Elsewhere `Mutex` uses a lock ThreadSanitizer already understands.
        return 0
        #endif
    }
}
