import Foundation
import Glibc
import Testing
import WebSocketStreams

/// The `TestServer` command line, run as a child process.
@Suite("TestServer command")
struct TestServerCommandTests {
    @Test("asked to stop with SIGTERM, it refuses new connections before it closes the open ones")
    func sigtermStopsAcceptingFirst() async throws {
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent("port-\(UUID().uuidString)").path
        defer { unlink(portFile) }
        let server = try WSDumpProcess(["--port", "0", "--port-file", portFile], executable: "TestServer")
        #expect(await server.waitFor("listening on"))
        let port = try String(contentsOfFile: portFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        // A client on /stall: the server never reads its answer to the 1001, so the server's
        // graceful close waits (up to 2 s) before it stops. A connection that came in then
        // would have been opened and dropped without a close frame.
        let closeReceived = AsyncStream.makeStream(of: Void.self)
        var configuration = WebSocketConfiguration()
        configuration.wireEventObserver = { event in
            if event.kind == .closeReceived { closeReceived.continuation.yield() }
        }
        let stalled = try await WebSocket.connect(to: "ws://127.0.0.1:\(port)/stall", configuration: configuration)
        server.send(signal: SIGTERM)
        for await _ in closeReceived.stream { break }

        do {
            let late = try await WebSocket.connect(to: "ws://127.0.0.1:\(port)/echo")
            Issue.record("a connection was accepted after SIGTERM (closed then with \(String(describing: late.closeCode)))")
            await late.close()
        } catch let error as WebSocketError {
            #expect(error.code == .connectionFailed, "\(error)")
        }
        withExtendedLifetime(stalled) {}
        // Its graceful stop waits for the stalled client; this test is done with it.
        server.send(signal: SIGKILL)
        _ = await server.finish()
    }
}
