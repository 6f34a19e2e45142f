import WebSocketTestServer

/// Runs `body` with a fresh test server on a free loopback port, stopping it afterwards.
func withTestServer<Result>(
    tls: TestServer.TLS? = nil, recordTexts: Bool = false, _ body: (TestServer) async throws -> Result
) async throws -> Result {
    try await TestServer.withServer(tls: tls, recordTexts: recordTexts, body)
}
