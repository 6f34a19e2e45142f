import Foundation
import SynchronizationSupport
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

/// The headers the tests send, all of them secrets but `X-Test`.
private func secretConfiguration() -> WebSocketConfiguration {
    var configuration = WebSocketConfiguration()
    configuration.headers = [
        "Authorization": "Bearer origin-secret", "Cookie": "session=origin-cookie", "X-Api-Key": "api-key-secret",
        "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0", "X-Test": "kept",
    ]
    configuration.sensitiveHeaders.insert("x-api-key")
    return configuration
}

/// Names the test server should look for besides the ones it knows.
private let customNames = "custom=proxy-authorization,x-api-key"

/// The test server's `/redirect` path to `target`, percent-encoded.
private func redirect(to target: String) -> String {
    "/redirect?to=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target)
}

@Suite("Secrets stay with their origin")
struct SensitiveHeaderTests {
    @Test("a redirect to another origin drops Authorization, Cookie, X-Api-Key and URL credentials")
    func crossOriginRedirectDropsSecrets() async throws {
        try await withTestServer { origin in
            try await withTestServer { other in
                let target = "ws://127.0.0.1:\(other.port)/headers?\(customNames)"
                let start = "ws://ann:url-password@127.0.0.1:\(origin.port)" + redirect(to: target)
                let connection = try await WebSocket.connect(to: start, configuration: secretConfiguration())
                #expect(connection.url == target)
                await connection.close()
                let seen = try #require(other.snapshot.connections.first?.headers)
                #expect(seen["x-test"] == "kept")
                for name in ["authorization", "cookie", "x-api-key", "proxy-authorization"] {
                    #expect(seen[name] == nil, "\(name) reached another origin: \(seen[name] ?? "")")
                }
                #expect(!seen.values.contains { $0.contains("secret") || $0.contains("origin-cookie") })
            }
        }
    }

    @Test("a same-origin redirect keeps them; Proxy-Authorization never reaches the origin")
    func sameOriginRedirectKeepsSecrets() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: redirect(to: "/headers?\(customNames)")), configuration: secretConfiguration())
            await connection.close()
            let seen = try #require(server.snapshot.connections.first?.headers)
            #expect(seen["authorization"] == "Bearer origin-secret")
            #expect(seen["cookie"] == "session=origin-cookie")
            #expect(seen["x-api-key"] == "api-key-secret")
            #expect(seen["proxy-authorization"] == nil)
        }
    }

    @Test("URL credentials go on within an origin as Basic authorization")
    func urlCredentialsWithinAnOrigin() async throws {
        try await withTestServer { server in
            let url = "ws://ann:pw@127.0.0.1:\(server.port)/redirect?to=/headers"
            let connection = try await WebSocket.connect(to: url)
            await connection.close()
            let seen = try #require(server.snapshot.connections.first?.headers)
            #expect(seen["authorization"] == "Basic " + Data("ann:pw".utf8).base64EncodedString())
        }
    }

    @Test("Proxy-Authorization from headers goes on the proxy's CONNECT only, never to the origin")
    func proxyAuthorizationOnlyOnConnect() async throws {
        let proxy = try TestConnectProxy(requiredCredentials: "proxy:secret")
        defer { proxy.stop() }
        try await withTestServer { server in
            var configuration = secretConfiguration()
            configuration.proxy = WebSocketProxy(stringLiteral: "http://127.0.0.1:\(proxy.port)")
            // The proxy answers 407 unless the header's credentials come with the CONNECT.
            let connection = try await WebSocket.connect(
                to: server.url(path: "/headers?\(customNames)"), configuration: configuration)
            await connection.close()
            #expect(proxy.connectRequests.count == 1)
            let seen = try #require(server.snapshot.connections.first?.headers)
            #expect(seen["proxy-authorization"] == nil)
            #expect(seen["authorization"] == "Bearer origin-secret")
        }
    }

    @Test("the upgrade request never carries Proxy-Authorization; logs and wire events redact sensitive values")
    func upgradeRequestAndRedaction() async throws {
        try await withTestServer { server in
            let heads = AnnotatedMutex<[String]>([])
            var configuration = secretConfiguration()
            configuration.headers["X-Custom-Secret-Less"] = "zzz-custom-value"
            configuration.sensitiveHeaders.insert("X-Custom-Secret-Less")
            configuration.wireEventObserver = { event in
                if event.kind == .handshakeRequestSent, let head = event.httpHead { heads.withLock { $0.append(head) } }
            }
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            await connection.close()
            let head = try #require(heads.withLock { $0.first })
            #expect(!head.lowercased().contains("proxy-authorization"))
            #expect(head.contains("X-Test: kept"))
            for secret in ["origin-secret", "origin-cookie", "api-key-secret", "zzz-custom-value"] {
                #expect(!head.contains(secret), "\(secret) in \(head)")
            }
        }
    }

    @Test("the redactor takes the configured sensitive names, whatever they are called")
    func redactorTakesConfiguredNames() throws {
        let url = try WebSocketURL(parsing: "ws://127.0.0.1/")
        let plain = SecretRedactor(url: url, headers: ["X-Plain": "value-1234"])
        #expect(plain.redact("X-Plain: value-1234") == "X-Plain: value-1234")
        let configured = SecretRedactor(url: url, headers: ["X-Plain": "value-1234"], sensitiveHeaders: ["x-PLAIN"])
        #expect(configured.redact("X-Plain: value-1234") == "X-Plain: <redacted>")
    }

    @Test("CONNECT carries Proxy-Authorization from headers only when the proxy URL has no credentials")
    func connectRequestBytes() throws {
        let url = try WebSocketURL(parsing: "ws://example.org:9001/feed")
        let bare = try ProxyAddress(parsing: "http://127.0.0.1:3128")
        #expect(String(decoding: bare.connectRequest(to: url, proxyAuthorization: "Bearer p"), as: UTF8.self)
            == "CONNECT example.org:9001 HTTP/1.1\r\nHost: example.org:9001\r\nProxy-Authorization: Bearer p\r\n\r\n")
        let withCredentials = try ProxyAddress(parsing: "http://ann:pw@127.0.0.1:3128")
        #expect(String(decoding: withCredentials.connectRequest(to: url, proxyAuthorization: "Bearer p"), as: UTF8.self)
            == "CONNECT example.org:9001 HTTP/1.1\r\nHost: example.org:9001\r\nProxy-Authorization: Basic YW5uOnB3\r\n\r\n")
    }
}
