import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// `-v` output and its redaction.
@Suite("Verbose output")
struct VerboseOutputTests {
    /// `-vv` shows the request the connection really wrote and the response head it read.
    @Test func secretsAreRedactedByDefault() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run([
                "-vv", "-H", "Authorization: Bearer secret123", "-t", "hi", "--count", "1", "--eof-wait", "5",
                server.url(path: "/echo?token=abc123"),
            ])
            #expect(result.status == 0)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.contains("--- request header ---"))
            #expect(lines.contains("GET /echo?token=<redacted> HTTP/1.1"))
            #expect(lines.contains("Authorization: <redacted>"))
            // The real key (not a placeholder) and the server's real answer to it.
            let key = lines.first { $0.hasPrefix("Sec-WebSocket-Key: ") }?.dropFirst("Sec-WebSocket-Key: ".count)
            #expect(key.map { $0.count == 24 && $0.hasSuffix("==") } == true)
            #expect(key.map { server.snapshot.connections.first?.headers["sec-websocket-key"] == String($0) } == true)
            #expect(lines.contains("--- response header ---"))
            #expect(lines.contains { $0.hasPrefix("HTTP/1.1 101") })
            let accept = lines.first { $0.hasPrefix("Sec-WebSocket-Accept: ") }?.dropFirst("Sec-WebSocket-Accept: ".count)
            #expect(accept.map { $0.count == 28 && $0.hasSuffix("=") } == true)
            // The request comes before the response, which comes before "connected".
            let requestAt = lines.firstIndex(of: "--- request header ---") ?? .max
            let responseAt = lines.firstIndex(of: "--- response header ---") ?? .max
            let connectedAt = lines.firstIndex { $0.hasPrefix("connected to ") } ?? .max
            #expect(requestAt < responseAt && responseAt < connectedAt)
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

    /// -v on wss:// prints the chain's pins with their roles, ready for --pin.
    @Test func verbosePrintsTheChainsPins() async throws {
        try await withTestServer(tls: .init()) { server in
            let caFile = try #require(server.caCertificateFile)
            let certificates = try #require(server.certificates)
            let result = try await WSDumpProcess.run(
                ["-v", "--ca-file", caFile, "-t", "hi", "--count", "1", "--eof-wait", "5", server.url(path: "/echo")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains(
                "pins: leaf \(certificates.serverPublicKeyPin), CA \(certificates.caPublicKeyPin)"), "\(result.stderr)")
        }
    }
}
