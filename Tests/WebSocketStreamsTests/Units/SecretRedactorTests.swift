import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

@Suite("SecretRedactor")
struct SecretRedactorTests {
    @Test("credential headers, query values and user info are replaced; other text is kept")
    func redacts() throws {
        let url = try WebSocketURL(parsing: "wss://alice:hunter22@example.org/feed?token=abc123xyz&room=lobby")
        let redactor = SecretRedactor(url: url, headers: [
            "Authorization": "Bearer eyJhbGciOi", "Cookie": "sid=s3cr3tvalue", "X-Api-Key": "key-9876", "Accept": "text/plain",
        ])
        let line = "GET /feed?token=abc123xyz&room=lobby Authorization: Bearer eyJhbGciOi cookie sid=s3cr3tvalue "
            + "x-api-key: key-9876 user hunter22 basic YWxpY2U6aHVudGVyMjI= accept: text/plain"
        let redacted = redactor.redact(line)
        for secret in ["abc123xyz", "eyJhbGciOi", "s3cr3tvalue", "key-9876", "hunter22", "YWxpY2U6aHVudGVyMjI="] {
            #expect(!redacted.contains(secret), "\(secret) left in: \(redacted)")
        }
        #expect(redacted.contains("&room=\(SecretRedactor.replacement)"))  // every query value: any may be a token
        #expect(redacted.contains("accept: text/plain"))
        #expect(redacted.contains(SecretRedactor.replacement))
    }

    @Test("a line without secrets is returned unchanged")
    func unchanged() throws {
        let url = try WebSocketURL(parsing: "ws://127.0.0.1:9001/echo")
        let redactor = SecretRedactor(url: url, headers: ["Accept": "x"])
        #expect(redactor.redact("lws_client_connect_2: connected") == "lws_client_connect_2: connected")
    }
}
