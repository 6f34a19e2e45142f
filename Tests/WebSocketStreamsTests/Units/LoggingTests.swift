import Logging
import Synchronization
import SynchronizationSupport
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Collects log messages in memory.
private final class CollectingLogHandler: LogHandler, Sendable {
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
}

@Suite("Logging")
struct LoggingTests {
    @Test("libwebsockets' lines for a connection reach that connection's logger")
    func lwsLinesReachLogger() async throws {
        try await withTestServer { server in
            let handler = CollectingLogHandler()
            var configuration = WebSocketConfiguration()
            configuration.logger = Logger(label: "test", factory: { _ in handler })
            configuration.maxMessageSize = 10
            let connection = try await WebSocket.connect(to: server.url(path: "/push?count=1&size=100"), configuration: configuration)
            for await _ in connection.messages {}
            let lines = handler.lines.withLock { $0 }
            #expect(lines.contains { $0.contains("maxMessageSize") }, "our own line: \(lines)")
            #expect(lines.contains { $0.contains("lws_") }, "a line from libwebsockets itself: \(lines.prefix(5))")
        }
    }
}
