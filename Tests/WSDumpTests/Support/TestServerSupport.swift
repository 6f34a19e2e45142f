import WebSocketTestServer

/// Runs `body` with a fresh test server on a free loopback port, stopping it afterwards.
func withTestServer<Result>(
    tls: TestServer.TLS? = nil, recordTexts: Bool = false, _ body: (TestServer) async throws -> Result
) async throws -> Result {
    let server = try await TestServer.start(tls: tls, recordTexts: recordTexts)
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
