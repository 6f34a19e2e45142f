import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// `-v` output and its redaction.
@Suite("Verbose output")
struct VerboseOutputTests {
    @Test func secretsAreRedactedByDefault() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run([
                "-vv", "-H", "Authorization: Bearer secret123", "-t", "hi", "--count", "1", "--eof-wait", "5",
                server.url(path: "/echo?token=abc123"),
            ])
            #expect(result.status == 0)
            #expect(result.stderr.contains("--- request header ---"))
            #expect(result.stderr.contains("GET /echo?token=<redacted> HTTP/1.1"))
            #expect(result.stderr.contains("Authorization: <redacted>"))
            #expect(result.stderr.contains("--- response header ---"))
            #expect(result.stderr.contains("Sec-WebSocket-Accept: <redacted>"))
            #expect(result.stderr.contains("> close: 1000 (normal closure)"))
            #expect(!result.stderr.contains("secret123"))
            #expect(!result.stderr.contains("abc123"))
            #expect(result.stdout == "text: hi\n")
            #expect(server.snapshot.connections.first?.headers["authorization"] == "Bearer secret123")
        }
    }

    @Test func showSecretsShowsThem() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run([
                "--verbose", "2", "--show-secrets", "-H", "Authorization: Bearer secret123", "-t", "hi", "--count", "1",
                "--eof-wait", "5", server.url(path: "/echo"),
            ])
            #expect(result.status == 0)
            #expect(result.stderr.contains("Authorization: Bearer secret123"))
        }
    }

    @Test func oneVShowsTypesAndSentMessages() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["-v", "--count", "1", "--eof-wait", "5", server.url(path: "/echo")], stdin: .bytes("hi\n"))
            #expect(result.status == 0)
            #expect(result.stdout == "text: hi\n")
            #expect(result.stderr.contains("> text: hi"))
            #expect(!result.stderr.contains("request header"))
        }
    }
}
