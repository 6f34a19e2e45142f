// The complete example of the "Testing your app" article, which shows it as an excerpt:
// an app type that subscribes to a price feed, and its tests against a handler and a
// replayed recording. Only public API, as an app's own test target would have.
import Synchronization
import Testing
import WebSocketStreams
import WebSocketTestServer

/// The app: subscribes to a price feed and hands on every line it sends, across drops.
final class PriceFeed: Sendable {
    private let socket: ReconnectingWebSocket

    init(url: String) {
        var policy = ReconnectPolicy()
        policy.initialDelay = .milliseconds(50)
        // Subscribes again on every connection, the first and each after a drop.
        socket = ReconnectingWebSocket(to: url, policy: policy) { connection in
            try await connection.send(.text("subscribe prices"))
        }
    }

    /// The feed's lines, in order.
    var lines: AsyncStream<String> {
        let messages = socket.messages
        return AsyncStream { continuation in
            let task = Task {
                for await case .text(let line) in messages { continuation.yield(line) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func stop() async {
        await socket.close()
    }
}

@Suite("PriceFeed against a scripted server")
struct PriceFeedTests {
    @Test("a snapshot, then updates, then a drop the app survives")
    func snapshotUpdatesAndADrop() async throws {
        let connections = Atomic<Int>(0)
        let feed = TestServer.Handler { connection in
            let number = connections.add(1, ordering: .relaxed).newValue
            guard await connection.receive() == .text("subscribe prices") else { return }
            try await connection.send(.text("snapshot \(number)"))
            try await connection.send(.text("update \(number).1"))
            if number == 1 {
                await connection.drop()   // the network fails: no close frame
                return
            }
            for await _ in connection.messages {}
        }
        try await TestServer.withServer(handlers: ["/prices": feed]) { server in
            let app = PriceFeed(url: server.url(path: "/prices"))
            var lines = app.lines.makeAsyncIterator()
            #expect(await lines.next() == "snapshot 1")
            #expect(await lines.next() == "update 1.1")
            // The app reconnected and subscribed again.
            #expect(await lines.next() == "snapshot 2")
            #expect(await lines.next() == "update 2.1")
            await app.stop()
            let seen = try await server.waitUntil { $0.openConnections.isEmpty }
            #expect(seen.handshakeCount == 2)
            #expect(seen.connections.last?.closeCodeReceived == .normalClosure)
        }
    }

    @Test("a conversation recorded with wsdump --record, replayed")
    func replayedConversation() async throws {
        // Usually a file: try TestServer.Recording(contentsOfFile: "Fixtures/prices.jsonl")
        let recording = try TestServer.Recording(jsonLines: """
            {"type":"recording","version":1,"url":"wss://prices.example.com/prices"}
            {"t":2.1,"direction":"out","type":"text","data":"subscribe prices"}
            {"t":40.7,"direction":"in","type":"text","data":"snapshot 1"}
            {"t":41.2,"direction":"in","type":"text","data":"update 1.1"}
            {"t":95.0,"direction":"in","type":"close","code":1012,"reason":"restarting"}
            """)
        try await TestServer.withServer(handlers: ["/prices": .replaying(recording)]) { server in
            let app = PriceFeed(url: server.url(path: "/prices"))
            var lines = app.lines.makeAsyncIterator()
            #expect(await lines.next() == "snapshot 1")
            #expect(await lines.next() == "update 1.1")
            await app.stop()
        }
    }
}
