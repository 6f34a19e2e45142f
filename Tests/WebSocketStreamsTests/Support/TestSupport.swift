import Testing
import WebSocketStreams
import WebSocketTestServer

/// Runs `body` with a fresh test server on a free loopback port, stopping it afterwards.
func withTestServer<Result>(
    tls: TestServer.TLS? = nil, compression: Bool = true, recordTexts: Bool = false,
    _ body: (TestServer) async throws -> Result
) async throws -> Result {
    try await TestServer.withServer(tls: tls, compression: compression, recordTexts: recordTexts, body)
}

/// The next message of `connection`, or nil when the stream ended.
func nextMessage(_ iterator: inout AsyncStream<WebSocketMessage>.Iterator) async -> WebSocketMessage? {
    await iterator.next()
}

/// Asserts that `operation` throws a `WebSocketError` and returns it.
func expectWebSocketError(
    _ operation: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
) async -> WebSocketError? {
    do {
        try await operation()
        Issue.record("expected a WebSocketError, but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as WebSocketError {
        return error
    } catch {
        Issue.record("expected a WebSocketError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The reason of `error` when it has `code`, else `nil`: the tests' stand-in for matching
/// an error kind and binding its reason.
func reason(of error: WebSocketError?, ifCode code: WebSocketError.Code) -> String? {
    guard let error, error.code == code else { return nil }
    return error.reason ?? ""
}

/// `error` when it has `code`, else `nil`: the tests' stand-in for matching an error kind.
func matching(_ error: WebSocketError?, _ code: WebSocketError.Code) -> WebSocketError? {
    guard let error, error.code == code else { return nil }
    return error
}
