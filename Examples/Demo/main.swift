// `make demo`: the SDK end to end against the bundled test server, on loopback.
//
// Starts a TestServer on a free port, connects to its echo route, sends a few text and
// binary messages, prints what went out and what came back, closes with 1000, prints the
// close code and what the connection reported to swift-metrics, stops the server and exits
// 0 (1 on any failure).
import FoundationEssentials
import Glibc
import MetricsTestKit
import WebSocketStreams
import WebSocketTestServer

@main
enum Demo {
    static func main() async {
        do {
            try await run()
        } catch {
            print("demo failed: \(error)")
            exit(1)
        }
    }

    static func run() async throws {
        let server = try await TestServer.start()
        print("TestServer listening on \(server.url(path: "/"))")
        // A program bootstraps a real backend (MetricsSystem.bootstrap); the demo gives the
        // connection swift-metrics' TestMetrics to print a summary at the end.
        let metrics = TestMetrics()
        var configuration = WebSocketConfiguration()
        configuration.metrics.factory = metrics
        let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
        print("connected to \(connection.url) (extensions: \(connection.extensions ?? "none"))")

        let outgoing: [WebSocketMessage] = [
            .text("hello from WebSocketStreams"),
            .binary(Data([0xDE, 0xAD, 0xBE, 0xEF])),
            .text("ünïcödé ✓"),
            .binary(Data(repeating: 0x2A, count: 64 * 1024)),
        ]
        for message in outgoing {
            try await connection.send(message)
            print("sent     \(message)")
        }
        // Take exactly the echoes with an iterator: leaving a `for await` loop early would
        // end the connection with 1001 (going away), and this demo closes with 1000.
        var received = 0
        var messages = connection.messages.makeAsyncIterator()
        while received < outgoing.count, let message = await messages.next() {
            print("received \(message)")
            received += 1
        }
        let roundTrip = try? await connection.ping()
        if let roundTrip { print("ping round trip: \(roundTrip)") }
        await connection.close(code: .normalClosure, reason: "demo done")
        print("closed: \(connection.closeCode.map { "\($0)" } ?? "?") \(connection.closeReason.debugDescription)")
        printSummary(of: metrics)
        let record = try await server.waitUntil { $0.closeCodes.count == 1 }
        print("server saw \(record.connections[0].messagesReceived) messages and close \(record.closeCodes[0])")
        await server.stop()
        guard received == outgoing.count, connection.closeCode == .normalClosure else {
            throw DemoError.unexpected("expected \(outgoing.count) echoes and a 1000 close")
        }
        print("demo ok")
    }

    /// One line of what the connection reported (names: the DocC article `Metrics`).
    static func printSummary(of metrics: TestMetrics) {
        func total(_ name: String, _ dimensions: [(String, String)] = []) -> Int64 {
            metrics.counterTotal(label: "websocket_client_\(name)", dimensions: dimensions)
        }
        func microseconds(_ name: String) -> String {
            let last = metrics.timers(label: "websocket_client_\(name)").first?.lastValue ?? 0
            return "\(last / 1000) µs"
        }
        let closes = metrics.counters(label: "websocket_client_connections_closed_total")
            .flatMap { $0.dimensions.filter { $0.0 == "code" }.map(\.1) }
        print("metrics: \(total("connections_opened_total")) opened, closed with \(closes.joined(separator: ", ")); "
            + "sent \(total("messages_sent_total")) messages (\(total("bytes_sent_total")) B), "
            + "received \(total("messages_received_total")) (\(total("bytes_received_total")) B); "
            + "handshake \(microseconds("handshake_duration")), ping \(microseconds("ping_rtt"))")
    }

    enum DemoError: Error { case unexpected(String) }
}
