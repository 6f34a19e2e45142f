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
        let metadata = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        lines.withLock { $0.append("\(event.level) \(event.message)" + (metadata.isEmpty ? "" : " [\(metadata)]")) }
    }

    /// A logger writing into this handler.
    var logger: Logger { Logger(label: "test", factory: { _ in self }) }

    /// The lines at debug level or above, for failure messages.
    var diagnostics: [String] { lines.withLock { $0 }.filter { !$0.hasPrefix("trace") } }
}
