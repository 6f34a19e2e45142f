import FoundationEssentials
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// The client against a `wss://` server that misbehaves: TLS itself broken (the `/tls/`
/// routes) and the byte-by-byte `/hostile/` routes of ``HostilePeerTests`` over TLS. Both
/// are served by the test server's raw TLS listener, which runs OpenSSL itself;
/// `server.url(path:)` points there.
@Suite("Hostile peers over TLS: broken records, resets, close_notify, and RFC 6455 violations over wss://")
struct TLSHostileTests {
    // MARK: - TLS broken

    /// A `/tls/` route, and what the client should make of it.
    struct BrokenTLSCase: Sendable, CustomTestStringConvertible {
        /// What `connection.error` should be: its kind and words it must contain (one of them).
        enum ExpectedError: Sendable {
            case connectionFailed(containingOneOf: [String])
        }

        var kind: String
        /// The messages sent whole before the misbehaviour.
        var messages: [WebSocketMessage]
        var error: ExpectedError

        var testDescription: String { kind }
    }

    @Test("broken TLS ends the stream with 1006 and an error that says how; only messages sent whole arrive", arguments: [
        // "hello" is in the record cut short, then a FIN.
        BrokenTLSCase(kind: "truncated-record", messages: [], error: .connectionFailed(containingOneOf: ["truncated"])),
        // Half the record of "lost", then a reset (after a ping and its pong). Usually
        // libwebsockets' read takes the reset's errno before the close reaches the client,
        // which then says what it sees: a record cut short. When the close comes first (seen
        // under ThreadSanitizer's timing), the socket still holds the reset and says so.
        BrokenTLSCase(kind: "reset-mid-record", messages: [],
                      error: .connectionFailed(containingOneOf: ["truncated", "connection reset by peer"])),
        // "bye", then close_notify and a FIN.
        BrokenTLSCase(kind: "close-notify", messages: [.text("bye")], error: .connectionFailed(containingOneOf: ["close_notify"])),
    ])
    func brokenTLS(_ broken: BrokenTLSCase) async throws {
        try await withTestServer(tls: .init()) { server in
            let connection = try await WebSocket.connect(
                to: server.url(path: "/tls/\(broken.kind)"), configuration: trusting(server))
            let messages = await drainToEnd(connection, limit: .seconds(4))
            #expect(messages == broken.messages)
            #expect(connection.closeCode == .abnormalClosure)
            if let matched = matching(connection.error, .protocolViolation), let code = matched.closeCode {
                Issue.record("a broken TLS stream was reported as a protocol violation: \(code)")
            }
            switch broken.error {
            case .connectionFailed(let words):
                if let reason = reason(of: connection.error, ifCode: .connectionFailed) {
                    #expect(words.contains { reason.lowercased().contains($0) }, "reason: \(reason)")
                } else {
                    Issue.record("expected \(broken.error), got \(String(describing: connection.error))")
                }
            }
            if broken.kind == "reset-mid-record" {
                // The reset waited for the pong to a ping sent after the 101, so the client
                // had read the 101 (a reset can make a peer drop bytes it has not read).
                #expect(server.snapshot.connections.first?.pongsReceived == 1)
            }
        }
    }

    // MARK: - RFC 6455 broken, over TLS

    /// A `/hostile/` route and what ``HostilePeerTests`` expects of it over plain TCP.
    struct HostileCase: Sendable, CustomTestStringConvertible {
        var kind: String
        var code: WebSocketCloseCode
        /// The reason of the client's error, where the plain test pins it.
        var reason: String?
        /// Whether the server surely reads the client's close before the connection ends
        /// (routes that send random bytes drop TCP on their own).
        var serverSeesClose = true

        var testDescription: String { kind }
    }

    @Test("protocol violations over wss:// end the stream as over ws://, with the same close code and error", arguments: [
        HostileCase(kind: "masked", code: .protocolError, reason: "the server sent a masked frame"),
        HostileCase(kind: "reserved-bits", code: .protocolError),
        HostileCase(kind: "unknown-opcode", code: .protocolError),
        HostileCase(kind: "fragmented-control", code: .protocolError),
        HostileCase(kind: "huge-length", code: .protocolError, serverSeesClose: false),
        HostileCase(kind: "garbage?seed=7", code: .protocolError, serverSeesClose: false),
        HostileCase(kind: "bad-utf8-fragments", code: .invalidFramePayloadData, reason: "invalid UTF-8 in a text message"),
    ])
    func hostileOverTLS(_ hostile: HostileCase) async throws {
        try await withTestServer(tls: .init()) { server in
            let url = server.url(path: "/hostile/\(hostile.kind)")
            #expect(url.hasPrefix("wss://127.0.0.1:\(server.rawTLSPort ?? 0)/"))
            let connection = try await WebSocket.connect(to: url, configuration: trusting(server))
            let messages = await drainToEnd(connection, limit: .seconds(4))
            #expect(messages.isEmpty)
            #expect(connection.closeCode == hostile.code)
            #expect(!connection.isOpen)
            guard let matched = matching(connection.error, .protocolViolation), let code = matched.closeCode, let reason = matched.closeReason else {
                Issue.record("expected a typed error, got \(String(describing: connection.error))")
                return
            }
            #expect(code == hostile.code)
            if let expected = hostile.reason { #expect(reason == expected) }
            if hostile.serverSeesClose {
                let seen = try await server.waitUntil(timeout: .seconds(3)) { $0.connections.first?.closeCodeReceived != nil }
                #expect(seen.connections.first?.closeCodeReceived == hostile.code)
            }
        }
    }

    // MARK: - The listener

    @Test("url(path:) sends raw and /tls/ routes to the raw TLS port, the rest to the main port; lws's port refuses them")
    func routing() async throws {
        try await withTestServer(tls: .init()) { server in
            let rawTLSPort = try #require(server.rawTLSPort)
            #expect(rawTLSPort != server.port)
            #expect(server.url(path: "/echo") == "wss://127.0.0.1:\(server.port)/echo")
            #expect(server.url(path: "/push?count=2") == "wss://127.0.0.1:\(server.port)/push?count=2")
            #expect(server.url(path: "/hostile/garbage?seed=3") == "wss://127.0.0.1:\(rawTLSPort)/hostile/garbage?seed=3")
            #expect(server.url(path: "tls/close-notify") == "wss://127.0.0.1:\(rawTLSPort)/tls/close-notify")
            #expect(server.url(path: "/slow?ms=10") == "wss://127.0.0.1:\(rawTLSPort)/slow?ms=10")
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(
                    to: "wss://127.0.0.1:\(server.port)/hostile/masked", configuration: trusting(server))
            }
            guard let matched = matching(error, .handshakeRejected), let status = matched.httpStatus else {
                Issue.record("expected a 501 from lws's listener, got \(String(describing: error))")
                return
            }
            #expect(status == 501)
        }
        try await withTestServer { server in
            #expect(server.rawTLSPort == nil)
            #expect(server.url(path: "/hostile/masked") == "ws://127.0.0.1:\(server.port)/hostile/masked")
        }
    }

    @Test("/slow over wss:// answers late; the raw TLS listener records connections, TLS resumption included")
    func slowOverTLS() async throws {
        try await withTestServer(tls: .init()) { server in
            for _ in 0..<2 {
                let connection = try await WebSocket.connect(to: server.url(path: "/slow?ms=50"), configuration: trusting(server))
                _ = await drainToEnd(connection, limit: .seconds(4))
                #expect(connection.closeCode == .normalClosure)
                #expect(connection.closeReason == "slow")
            }
            let seen = try await server.waitUntil(timeout: .seconds(3)) { $0.openConnections.isEmpty }
            #expect(seen.connections.map(\.path) == ["/slow", "/slow"])
            #expect(seen.connections.first?.query == ["ms": "50"])
            #expect(seen.connections.first?.headers["upgrade"] == "websocket")
            #expect(seen.connections.map(\.tlsResumed) == [false, true])
        }
    }

    @Test("the handshake routes over wss://: a 101 trickled times out, an endless header block hits the cap")
    func handshakeRoutesOverTLS() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = trusting(server)
            configuration.connectTimeout = .milliseconds(800)
            let started = ContinuousClock.now
            let trickled = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/hostile/slowloris?ms=100"), configuration: configuration)
            }
            #expect(trickled?.code == .timedOut)
            let endless = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/huge-headers"), configuration: trusting(server))
            }
            guard let reason = reason(of: endless, ifCode: .connectionFailed) else {
                Issue.record("expected connectionFailed, got \(String(describing: endless))")
                return
            }
            #expect(reason.contains("exceed 65536 bytes"), "reason: \(reason)")
            #expect(ContinuousClock.now - started < .seconds(4))
        }
    }

    @Test("/uncompressed over wss://: frames without RSV1 under permessage-deflate arrive once, then 1000")
    func uncompressedOverTLS() async throws {
        try await withTestServer(tls: .init()) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/uncompressed"), configuration: trusting(server))
            #expect(connection.extensions == "permessage-deflate")
            #expect(await drainToEnd(connection, limit: .seconds(4)) == [.text("uncompressed")])
            #expect(connection.closeCode == .normalClosure)
        }
    }

    @Test("stop() ends raw TLS connections, open or still waiting for their 101, and returns promptly")
    func stopEndsConnections() async throws {
        try await withTestServer(tls: .init()) { server in
            let configuration = trusting(server)
            let open = try await WebSocket.connect(to: server.url(path: "/frame-echo"), configuration: configuration)
            let hangURL = server.url(path: "/hang")
            async let hanging = expectWebSocketError {
                _ = try await WebSocket.connect(to: hangURL, configuration: configuration)
            }
            _ = try await server.waitUntil(timeout: .seconds(3)) { $0.connections.count == 2 }
            let started = ContinuousClock.now
            await server.stop()  // stopping again as the scope ends does nothing
            #expect(ContinuousClock.now - started < .seconds(2))
            _ = await drainToEnd(open, limit: .seconds(3))
            #expect(open.closeCode == .abnormalClosure)
            let hangingError = await hanging
            guard reason(of: hangingError, ifCode: .connectionFailed) != nil else {
                Issue.record("the handshake /hang left waiting should fail as the server stops, got \(String(describing: hangingError))")
                return
            }
            #expect(server.snapshot.openConnections.isEmpty)
        }
    }

    // MARK: - Helpers

    /// A configuration trusting the server's generated CA.
    private func trusting(_ server: TestServer) -> WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.tls.trustedCAFile = server.caCertificateFile
        return configuration
    }
}
