import Logging
import SynchronizationSupport

/// Collects log messages in memory.
final class CollectingLogHandler: LogHandler, Sendable {
    let lines = AnnotatedMutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message)") }
    }

    /// A logger writing into this handler.
    var logger: Logger { Logger(label: "test", factory: { _ in self }) }

    /// The lines at debug level or above, for failure messages.
    var diagnostics: [String] { lines.withLock { $0 }.filter { !$0.hasPrefix("trace") } }
}
