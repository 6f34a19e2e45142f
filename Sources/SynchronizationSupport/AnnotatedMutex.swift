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
package struct AnnotatedMutex<Value: ~Copyable>: ~Copyable {
    private let mutex: Mutex<Value>
    /// The address ThreadSanitizer knows this lock by; 0 when ThreadSanitizer is not loaded.
    private let syncAddress: UInt

    /// A lock protecting `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
        syncAddress = ThreadSanitizerAnnotations.isActive ? UInt(bitPattern: malloc(1)) : 0
    }

    deinit {
        if syncAddress != 0 { free(UnsafeMutableRawPointer(bitPattern: syncAddress)) }
    }

    /// Runs `body` with exclusive access to the value.
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = syncAddress
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            ThreadSanitizerAnnotations.acquire(address)
            defer { ThreadSanitizerAnnotations.release(address) }
            return try body(&value)
        }
    }
}

extension AnnotatedMutex: Sendable where Value: ~Copyable {}

/// Calls ThreadSanitizer's `__tsan_acquire` / `__tsan_release` when its runtime is loaded.
package enum ThreadSanitizerAnnotations {
    private typealias Annotation = @convention(c) (UnsafeMutableRawPointer?) -> Void

    private static let acquireFunction = address(of: "__tsan_acquire")
    private static let releaseFunction = address(of: "__tsan_release")

    /// Whether the process runs under ThreadSanitizer.
    package static var isActive: Bool { acquireFunction != 0 }

    static func acquire(_ lock: UInt) { call(acquireFunction, lock) }
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
