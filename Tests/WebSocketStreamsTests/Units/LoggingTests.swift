import FoundationEssentials
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
            // Reading pauses when the consumer falls behind: lws logs it (lws_rx_flow_control) in the
            // connection's read callback.
            configuration.maxMessageSize = 1 << 20
            configuration.maxBufferedMessages = 2
            let paused = try await WebSocket.connect(to: server.url(path: "/push?count=50&size=100"), configuration: configuration)
            // Nothing is read until the buffer has filled and reading has paused.
            await eventually("lws logs the pause") { handler.lines.withLock { $0.contains { $0.contains("lws_rx_flow_control") } } }
            var received = 0
            for await _ in paused.messages {
                received += 1
                if received == 50 { break }
            }
            #expect(received == 50)
            let lines = handler.lines.withLock { $0 }
            #expect(lines.contains { $0.contains("maxMessageSize") }, "our own line: \(lines)")
            #expect(lines.contains { $0.contains("lws_rx_flow_control") }, "a line from libwebsockets itself: \(lines.prefix(5))")
        }
    }

    @Test("no secret reaches the logs at trace level: Authorization, cookies, query tokens, URL credentials")
    func noSecretsInLogs() async throws {
        try await withTestServer { server in
            let handler = CollectingLogHandler()
            var configuration = WebSocketConfiguration()
            configuration.logger = Logger(label: "test", factory: { _ in handler })
            configuration.headers = [
                "Authorization": "Bearer SECRET-BEARER-71",
                "Cookie": "session=SECRET-COOKIE-72",
                "X-Api-Key": "SECRET-APIKEY-73",
            ]
            let base = server.url(path: "/echo?token=SECRET-QUERY-74&room=lobby")
            let url = "ws://alice:SECRET-PASSWORD-75@" + base.dropFirst("ws://".count)
            // The loop logs what lws says outside any connection's callback: collect it too.
            let loop = WebSocketEventLoop(name: "secrets", logger: Logger(label: "loop", factory: { _ in handler }))
            let connection = try await WebSocket.connect(to: url, configuration: configuration, eventLoop: loop)
            try await connection.send(.text("hello"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("hello"))
            await connection.close()
            // A refused handshake logs too: its headers must not leak either.
            _ = try? await WebSocket.connect(
                to: server.url(path: "/reject?status=401&token=SECRET-QUERY-76"), configuration: configuration, eventLoop: loop)
            await loop.shutdown()
            let lines = handler.lines.withLock { $0 }
            #expect(lines.count > 20, "trace logging should produce lines: \(lines.count)")
            for secret in ["SECRET-BEARER-71", "SECRET-COOKIE-72", "SECRET-APIKEY-73", "SECRET-QUERY-74", "SECRET-PASSWORD-75",
                           "SECRET-QUERY-76", "YWxpY2U6U0VDUkVULVBBU1NXT1JELTc1"] {
                let leaks = lines.filter { $0.contains(secret) }
                #expect(leaks.isEmpty, "\(secret) leaked: \(leaks.prefix(3))")
            }
        }
    }
}
