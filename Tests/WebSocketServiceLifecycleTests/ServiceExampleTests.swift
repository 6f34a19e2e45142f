import Glibc
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Examples/WebSocketServiceExample as a process", .timeLimit(.minutes(1)))
struct ServiceExampleTests {
    @Test func sigtermClosesWithGoingAwayAndExitsZero() async throws {
        try await TestServer.withServer { server in
            let example = try ServiceExampleProcess([server.url(path: "/echo"), "--subscribe", "hello"])
            defer { example.killIfRunning() }
            // Generous: a process starting on a busy machine.
            try await server.waitUntil(timeout: .seconds(10)) { $0.connections.count == 1 }
            try await example.line(containing: #"received text("hello")"#)

            example.send(signal: SIGTERM)
            #expect(try await example.exit() == .exited(0))
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
            try await example.line(containing: "socket ended: completed")  // the handler's loop ended
        }
    }
}
