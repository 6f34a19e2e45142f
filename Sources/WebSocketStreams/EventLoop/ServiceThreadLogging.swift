import CLibWebSockets
import Glibc
import Logging
import Synchronization
import SynchronizationSupport

/// Routes libwebsockets' process-global log output to swift-log.
///
/// lws has one emit function for the whole process and calls it on whichever thread
/// logs. Each service thread registers itself in a thread-specific slot, so a line
/// logged on a service thread reaches that thread's delegate (which picks the logger of
/// the connection being serviced). Lines logged elsewhere are dropped: lws is only
/// called on service threads, so there are none in practice. Nothing reaches stderr.
package enum ServiceThreadLogging {
    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The lws levels currently enabled; only grows. Errors and warnings are always on
    /// (rare and useful); the rest only for a logger at `.debug` or `.trace`: lws 4.1
    /// logs notices on every write, and each enabled line costs a formatted string.
    private static let enabledLevels = AnnotatedMutex<Int32>(0)

    private static let emit: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { level, line in
        guard let line, let slot = pthread_getspecific(threadKey) else { return }
        let thread = Unmanaged<ServiceThread>.fromOpaque(slot).takeUnretainedValue()
        var text = String(cString: line)
        while text.last == "\n" { text.removeLast() }
        thread.delegate.log(level: level, line: text)
    }

    /// Registers `thread` as the current service thread. Called on the service thread.
    static func install(for thread: ServiceThread) {
        pthread_setspecific(threadKey, Unmanaged.passUnretained(thread).toOpaque())
        enable(for: .warning)
    }

    /// Clears the registration of the current thread.
    static func uninstall() {
        pthread_setspecific(threadKey, nil)
    }

    /// Makes lws emit the levels a logger at `logLevel` would print.
    static func enable(for logLevel: Logger.Level) {
        var wanted = LLL_ERR | LLL_WARN
        if logLevel <= .debug { wanted |= LLL_NOTICE | LLL_INFO }
        if logLevel <= .trace { wanted |= LLL_DEBUG | LLL_CLIENT }
        enabledLevels.withLock { levels in
            guard levels | wanted != levels else { return }
            levels |= wanted
            // Under the lock, so concurrent service threads set lws's global in order.
            lws_set_log_level(levels, emit)
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
