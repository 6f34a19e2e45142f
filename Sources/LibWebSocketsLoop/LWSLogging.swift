import CLibWebSockets
import Glibc
import Logging
import Synchronization
import SynchronizationSupport

/// Routes libwebsockets' process-global log output to swift-log.
///
/// lws has one emit function for the whole process and calls it on whichever thread
/// logs. Each loop thread registers itself in a thread-specific slot, so a line
/// logged on a loop thread reaches that thread's delegate (which picks the logger of
/// the connection being serviced). Lines logged elsewhere are dropped: lws is only
/// called on loop threads, so there are none in practice. Nothing reaches stderr.
package enum LWSLogging {
    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// How many live connections want lws's verbose levels. lws's mask is process-global:
    /// one trace logger would otherwise make every loop in the process (servers included)
    /// format a line per frame for the rest of its life. Errors and warnings are always
    /// on (rare and useful); notices and info only while a `.debug` logger is live, debug
    /// and client lines only while a `.trace` one is (lws 4.1 logs notices on every write).
    private struct Claims {
        var debug = 0
        var trace = 0
        var applied: Int32 = 0

        var wanted: Int32 {
            var levels = LLL_ERR | LLL_WARN
            if debug + trace > 0 { levels |= LLL_NOTICE | LLL_INFO }
            if trace > 0 { levels |= LLL_DEBUG | LLL_CLIENT }
            return levels
        }
    }

    private static let claims = AnnotatedMutex(Claims())

    private static let emit: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { level, line in
        guard let line, let slot = pthread_getspecific(threadKey) else { return }
        let thread = Unmanaged<EventLoopThread>.fromOpaque(slot).takeUnretainedValue()
        var text = String(cString: line)
        while text.last == "\n" { text.removeLast() }
        if thread.spare.heldLogLines != nil {
            thread.spare.heldLogLines?.append((level, text))
        } else {
            thread.delegate.log(level: level, line: text)
        }
    }

    /// Runs `body`, which calls lws under a lock, holding back the lines lws logs on this
    /// thread meanwhile; they reach the delegate (and the user's logger) once `body` has
    /// returned and its lock is released. Loggers are user code, never called under a lock.
    package static func holdingLines<Result>(_ body: () -> Result) -> Result {
        guard let slot = pthread_getspecific(threadKey) else { return body() }
        let thread = Unmanaged<EventLoopThread>.fromOpaque(slot).takeUnretainedValue()
        guard thread.spare.heldLogLines == nil else { return body() }  // an outer call delivers them
        thread.spare.heldLogLines = []
        let result = body()
        let lines = thread.spare.heldLogLines ?? []
        thread.spare.heldLogLines = nil
        for (level, line) in lines { thread.delegate.log(level: level, line: line) }
        return result
    }

    /// Registers `thread` as the current loop thread. Called on the loop thread.
    static func install(for thread: EventLoopThread) {
        pthread_setspecific(threadKey, Unmanaged.passUnretained(thread).toOpaque())
        adjust(.info, by: 0)
    }

    /// Clears the registration of the current thread.
    static func uninstall() {
        pthread_setspecific(threadKey, nil)
    }

    /// Makes lws emit the levels a logger at `logLevel` prints, until the matching
    /// ``releaseClaim(for:)``. Loggers above `.debug` claim nothing.
    package static func claim(for logLevel: Logger.Level) {
        adjust(logLevel, by: 1)
    }

    /// Ends a ``claim(for:)`` made with the same level.
    package static func releaseClaim(for logLevel: Logger.Level) {
        adjust(logLevel, by: -1)
    }

    private static func adjust(_ logLevel: Logger.Level, by delta: Int) {
        holdingLines { setLevel(logLevel, by: delta) }
    }

    private static func setLevel(_ logLevel: Logger.Level, by delta: Int) {
        claims.withLock { claims in
            if logLevel <= .trace {
                claims.trace += delta
            } else if logLevel <= .debug {
                claims.debug += delta
            }
            let wanted = claims.wanted
            guard wanted != claims.applied else { return }
            claims.applied = wanted
            // Under the lock, so concurrent loop threads set lws's global in order.
            lws_set_log_level(wanted, emit)
        }
    }

    /// The swift-log level for an lws level bit.
    package static func logLevel(forLWSLevel level: Int32) -> Logger.Level {
        switch level {
        case LLL_ERR: .error
        case LLL_WARN: .warning
        case LLL_NOTICE, LLL_INFO: .debug
        default: .trace
        }
    }
}
