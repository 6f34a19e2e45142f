import CoreMetrics
import Foundation
import MetricsTestKit
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// A configuration that reports to `metrics` (its own `TestMetrics`, so tests never
/// depend on what `MetricsSystem` was bootstrapped with, or on each other).
private func configuration(reportingTo metrics: TestMetrics) -> WebSocketConfiguration {
    var configuration = WebSocketConfiguration()
    configuration.metrics.factory = metrics
    return configuration
}

private func total(_ metrics: TestMetrics, _ name: String, _ dimensions: [(String, String)] = []) -> Int64 {
    metrics.counterTotal(label: "websocket_client_\(name)", dimensions: dimensions)
}

@Suite("swift-metrics, recorded into TestMetrics against the test server")
struct MetricsTests {
    @Test("an exchange records its messages and bytes each way, the open and the close code")
    func exchange() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            let texts = ["one", "two two", "three three three", String(repeating: "é", count: 200)]
            let binaries = [Data(count: 10), Data(repeating: 7, count: 3000)]
            let byteCount = texts.map(\.utf8.count).reduce(0, +) + binaries.map(\.count).reduce(0, +)

            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration(reportingTo: metrics))
            for text in texts { try await connection.send(.text(text)) }
            for binary in binaries { try await connection.send(.binary(binary)) }
            var iterator = connection.messages.makeAsyncIterator()
            for _ in 0..<(texts.count + binaries.count) { _ = await iterator.next() }
            await connection.close(code: WebSocketCloseCode(rawValue: 4321), reason: "done")

            #expect(total(metrics, "connections_opened_total") == 1)
            #expect(total(metrics, "messages_sent_total", [("type", "text")]) == Int64(texts.count))
            #expect(total(metrics, "messages_sent_total", [("type", "binary")]) == Int64(binaries.count))
            #expect(total(metrics, "messages_received_total", [("type", "text")]) == Int64(texts.count))
            #expect(total(metrics, "messages_received_total", [("type", "binary")]) == Int64(binaries.count))
            #expect(total(metrics, "bytes_sent_total") == Int64(byteCount))
            #expect(total(metrics, "bytes_received_total") == Int64(byteCount))
            #expect(total(metrics, "connections_closed_total", [("code", "4321"), ("initiator", "local")]) == 1)
            #expect(total(metrics, "connections_closed_total") == 1)
            #expect(total(metrics, "connection_failures_total") == 0)
            #expect(try metrics.expectMeter("websocket_client_connections_open").values == [1, 0])
            #expect((try metrics.expectMeter("websocket_client_send_queue_bytes").lastValue ?? 0) == 0)
            let handshake = try metrics.expectTimer("websocket_client_handshake_duration").values
            #expect(handshake.count == 1)
            #expect(handshake.allSatisfy { $0 > 0 && $0 < 10_000_000_000 })
        }
    }

    @Test("a close started by the server is counted under its code, with initiator peer")
    func peerClose() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: "/close?code=4002&reason=bye"), configuration: configuration(reportingTo: metrics))
            for await _ in connection.messages {}
            #expect(connection.closeCode == WebSocketCloseCode(rawValue: 4002))
            #expect(total(metrics, "connections_closed_total", [("code", "4002"), ("initiator", "peer")]) == 1)
            #expect(try metrics.expectMeter("websocket_client_connections_open").lastValue == 0)
        }
    }

    @Test("failed connects are counted by the kind of their error, and open nothing")
    func failures() async throws {
        let metrics = TestMetrics()
        let configuration = configuration(reportingTo: metrics)
        let refused = try await TestServer.start()
        let refusedURL = refused.url(path: "/echo")
        await refused.stop()
        _ = await expectWebSocketError { _ = try await WebSocket.connect(to: refusedURL, configuration: configuration) }
        _ = await expectWebSocketError { _ = try await WebSocket.connect(to: "ftp://not-a-websocket", configuration: configuration) }
        try await withTestServer { server in
            _ = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=403"), configuration: configuration)
            }
        }
        #expect(total(metrics, "connection_failures_total", [("kind", "connectionFailed")]) == 1)
        #expect(total(metrics, "connection_failures_total", [("kind", "invalidURL")]) == 1)
        #expect(total(metrics, "connection_failures_total", [("kind", "handshakeRejected")]) == 1)
        #expect(total(metrics, "connection_failures_total") == 3)
        #expect(total(metrics, "connections_opened_total") == 0)
        #expect(total(metrics, "connections_closed_total") == 0)
        #expect(metrics.timers(label: "websocket_client_handshake_duration").allSatisfy { $0.values.isEmpty })
    }

    @Test("a ReconnectingWebSocket counts its reconnect, and each connection's open and close")
    func reconnect() async throws {
        let metrics = TestMetrics()
        try await withTestServer(compression: false) { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            policy.maxDelay = .milliseconds(100)
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"), configuration: configuration(reportingTo: metrics), policy: policy
            ) { connection in
                try await connection.send(.text("hello"))
            }
            var messages = socket.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("hello"))
            #expect(total(metrics, "reconnects_total") == 0)
            await server.disconnectAll()
            #expect(await messages.next() == .text("hello"))
            await socket.close()

            #expect(total(metrics, "reconnects_total") == 1)
            #expect(total(metrics, "connections_opened_total") == 2)
            #expect(total(metrics, "connections_closed_total", [("code", "1006"), ("initiator", "connection_lost")]) == 1)
            #expect(total(metrics, "connections_closed_total", [("code", "1000"), ("initiator", "local")]) == 1)
            let handshakes = try metrics.expectTimer("websocket_client_handshake_duration")
            #expect(handshakes.values.count == 2)
        }
    }

    @Test("ping() and keep-alive pings record their round trips")
    func pingRoundTrips() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            var configuration = configuration(reportingTo: metrics)
            configuration.pingInterval = nil
            let quiet = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let timer = try metrics.expectTimer("websocket_client_ping_rtt")
            #expect(timer.values.isEmpty)
            _ = try await quiet.ping()
            // Recorded before `ping()` returns.
            #expect(timer.values.count == 1)
            await quiet.close()

            configuration.pingInterval = .milliseconds(20)
            let keptAlive = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            await eventually("a keep-alive's round trip") { timer.values.count >= 2 }
            await keptAlive.close()
            #expect(timer.values.allSatisfy { $0 > 0 && $0 < 5_000_000_000 })
        }
    }

    @Test("a queue of unwritten sends shows in the send-queue meter and returns to zero at the end")
    func sendQueue() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            // The server never reads: once the socket buffers fill, sends pile up.
            let connection = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration(reportingTo: metrics))
            let meter = try metrics.expectMeter("websocket_client_send_queue_bytes")
            let chunk = Data(repeating: 1, count: 64 * 1024)
            let sender = Task {
                while true { try await connection.send(.binary(chunk)) }
            }
            await eventually("a backlog in the send queue") { (meter.lastValue ?? 0) >= 64 * 1024 }
            await server.disconnectAll()
            await connection.waitUntilClosedForTests()
            sender.cancel()
            _ = await sender.result
            #expect(meter.lastValue == 0)
            #expect(meter.values.allSatisfy { $0 >= 0 })
        }
    }

    @Test("labels take the configured prefix and every metric the extra dimensions")
    func prefixAndDimensions() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            var configuration = configuration(reportingTo: metrics)
            configuration.metrics.labelPrefix = "feed_ws"
            configuration.metrics.dimensions = [("endpoint", "prices")]
            try await WebSocket.withConnection(to: server.url(path: "/echo"), configuration: configuration) { connection in
                try await connection.send(.text("tick"))
                var iterator = connection.messages.makeAsyncIterator()
                _ = await iterator.next()
            }
            #expect(try metrics.expectCounter("feed_ws_connections_opened_total", [("endpoint", "prices")]).totalValue == 1)
            #expect(try metrics.expectCounter(
                "feed_ws_messages_received_total", [("type", "text"), ("endpoint", "prices")]).totalValue == 1)
            #expect(metrics.counters.allSatisfy { $0.label.hasPrefix("feed_ws_") })
            #expect(metrics.counters.allSatisfy { $0.dimensions.contains { $0 == ("endpoint", "prices") } })
        }
    }

    @Test("without a factory: nothing is made when no backend is bootstrapped, and a task-local one is used")
    func defaultFactory() async throws {
        try await withTestServer { server in
            // No test bootstraps MetricsSystem: the no-op backend, so no handles at all.
            let plain = try await WebSocket.connect(to: server.url(path: "/echo"))
            #expect(plain.connection.metrics == nil)
            try await plain.send(.text("still works"))
            var iterator = plain.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("still works"))
            await plain.close()
            #expect(plain.closeCode == .normalClosure)

            // `nil` means `MetricsSystem.factory` as `connect` sees it, task-local binding included.
            let metrics = TestMetrics()
            let bound = try await withMetricsFactory(metrics) {
                try await WebSocket.connect(to: server.url(path: "/echo"))
            }
            #expect(bound.connection.metrics != nil)
            await bound.close()
            #expect(total(metrics, "connections_opened_total") == 1)
            #expect(total(metrics, "connections_closed_total", [("code", "1000")]) == 1)
        }
    }
}

extension WebSocket {
    /// Waits until the connection has ended (for tests that end it from the server side).
    func waitUntilClosedForTests() async {
        await connection.waitForEnding()
    }
}
