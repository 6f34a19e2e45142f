import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

@Suite("Typed errors for bad input and failed handshakes")
struct ErrorTests {
    @Test("malformed URLs are rejected with the reason", arguments: [
        "", "http://example.org/", "ws//missing-colon", "ws://", "ws://host:0/", "ws://host:70000/",
        "ws://host:abc/", "ws://exa mple.org/", "ws://host/#fragment", "ws://[::1/",
    ])
    func malformedURL(url: String) async {
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: url) }
        guard let reason = reason(of: error, ifCode: .invalidURL) else {
            Issue.record("expected invalidURL for '\(url)', got \(String(describing: error))")
            return
        }
        #expect(!reason.isEmpty)
    }

    @Test("a refused port fails fast with connectionFailed")
    func refusedPort() async throws {
        let server = try await TestServer.start()
        let url = server.url(path: "/echo")
        await server.stop()
        let started = ContinuousClock.now
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: url) }
        guard let reason = reason(of: error, ifCode: .connectionFailed) else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("127.0.0.1"))
        #expect(reason.contains("connection refused"), "the socket's own error, in the user's words: \(reason)")
        // Refused at once, not after the 10 s connect timeout.
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test("an unresolvable host fails with connectionFailed while other connections keep working")
    func unresolvableHost() async throws {
        try await withTestServer { server in
            let open = try await WebSocket.connect(to: server.url(path: "/echo"))
            async let failure = expectWebSocketError {
                _ = try await WebSocket.connect(to: "ws://no-such-host.invalid/socket")
            }
            try await open.send(.text("still served"))
            var iterator = open.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("still served"))
            let error = await failure
            guard let reason = reason(of: error, ifCode: .connectionFailed) else {
                Issue.record("expected connectionFailed, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("no-such-host.invalid"))
            await open.close()
        }
    }

    @Test("a 401 is handshakeRejected with its WWW-Authenticate header")
    func unauthorized() async throws {
        try await withTestServer { server in
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=401"))
            }
            guard let matched = matching(error, .handshakeRejected), let status = matched.httpStatus, let headers = matched.headers else {
                Issue.record("expected handshakeRejected, got \(String(describing: error))")
                return
            }
            #expect(status == 401)
            #expect(headers["WWW-Authenticate"] == "Bearer realm=\"test-server\"")
            #expect(headers["Content-Type"]?.hasPrefix("text/plain") == true)
        }
    }

    @Test("a 503 carries Retry-After")
    func serviceUnavailable() async throws {
        try await withTestServer { server in
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=503&retry-after=7"))
            }
            #expect(error == .handshakeRejected(status: 503, headers: rejectionHeaders(error), body: Data("rejected by the test server".utf8)))
            if let matched = matching(error, .handshakeRejected), let headers = matched.headers { #expect(headers["Retry-After"] == "7") }
        }
    }

    @Test("a handshake that never answers times out with timedOut")
    func handshakeTimeout() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.connectTimeout = .milliseconds(300)
            let started = ContinuousClock.now
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/hang"), configuration: configuration)
            }
            #expect(error?.code == .timedOut)
            // The 300 ms deadline applied, not the 10 s default.
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test("a slow handshake within the timeout succeeds")
    func slowHandshake() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.connectTimeout = .seconds(10)
            let started = ContinuousClock.now
            let connection = try await WebSocket.connect(to: server.url(path: "/slow?ms=200"), configuration: configuration)
            #expect(ContinuousClock.now - started >= .milliseconds(200))
            for await _ in connection.messages {}
            #expect(connection.closeCode == .normalClosure)
            #expect(connection.closeReason == "slow")
        }
    }

    @Test("cancelling connect ends it promptly with CancellationError")
    func cancelConnect() async throws {
        try await withTestServer { server in
            let attempt = Task { try await WebSocket.connect(to: server.url(path: "/hang")) }
            _ = try await server.waitUntil { $0.connections.count == 1 }
            attempt.cancel()
            do {
                _ = try await attempt.value
                Issue.record("connect returned")
            } catch {
                #expect(error is CancellationError)
            }
            try await server.waitUntil { $0.connections.first?.closedAt != nil }
        }
    }

    @Test("bad configuration is rejected before connecting")
    func invalidConfiguration() async {
        var configuration = WebSocketConfiguration()
        configuration.headers["X-Bad"] = "line\r\nbreak"
        let error = await expectWebSocketError {
            _ = try await WebSocket.connect(to: "ws://127.0.0.1:9/", configuration: configuration)
        }
        guard reason(of: error, ifCode: .invalidConfiguration) != nil else {
            Issue.record("expected invalidConfiguration, got \(String(describing: error))")
            return
        }
    }

    // MARK: - Words that say what to do next

    @Test("a plain HTTP answer (200, or 404 for a wrong path) says no WebSocket endpoint is there", arguments: [200, 404])
    func noEndpoint(status: Int) async throws {
        try await withTestServer { server in
            let path = status == 404 ? "/no-such-route" : "/reject?status=200"
            let error = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(path: path)) }
            #expect(error?.code == .handshakeRejected)
            #expect(error?.httpStatus == status)
            // The path without its query (which may carry a token).
            let shown = status == 404 ? "/no-such-route" : "/reject"
            #expect(error?.description == "no WebSocket endpoint at \(shown) on 127.0.0.1:\(server.port) (HTTP \(status), expected 101)")
        }
    }

    @Test("a refusal that is not about the endpoint keeps its status words")
    func otherRefusalsKeepTheirWords() async throws {
        try await withTestServer { server in
            let error = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(path: "/reject?status=403")) }
            #expect(error?.description == "handshake rejected: HTTP 403")
        }
    }

    @Test("wss:// to a port that does not speak TLS says so, and suggests ws://")
    func tlsToAPlainPort() async throws {
        try await withTestServer { server in
            let url = "wss://" + server.url(path: "/echo").dropFirst("ws://".count)
            let error = await expectWebSocketError { _ = try await WebSocket.connect(to: url) }
            #expect(error?.code == .tlsFailure)
            #expect(error?.description.contains("does not speak TLS on this port (try ws://)") == true, "\(String(describing: error))")
        }
    }

    @Test("a handshake timeout names the limit, the setting and the step it waited on")
    func timeoutWords() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.connectTimeout = .milliseconds(300)
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/hang"), configuration: configuration)
            }
            #expect(error?.code == .timedOut)
            // The step: the upgrade's answer (under a sanitizer's load, rarely, still the TCP connect).
            let upgrade = "for the server's answer to the upgrade request (127.0.0.1:\(server.port)/hang)"
            let tcp = "for the TCP connection to 127.0.0.1:\(server.port)"
            let words = error?.description ?? ""
            #expect(words == "timed out after 0.3 seconds (connectTimeout) waiting \(upgrade)"
                || words == "timed out after 0.3 seconds (connectTimeout) waiting \(tcp)", "\(words)")
        }
    }

    @Test("an invalid URL says what a URL looks like")
    func invalidURLWords() async {
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: "not a url") }
        #expect(error?.description == "invalid URL: 'not a url': it contains a space (a WebSocket URL looks like ws://host[:port]/path)")
    }
}
