import Logging
import Synchronization
import SynchronizationSupport
import Testing
import WebSocketStreams
import WebSocketTestServer

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
