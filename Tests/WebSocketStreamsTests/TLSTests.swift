import Testing
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("TLS against a wss:// test server with certificates generated at start")
struct TLSTests {
    @Test("an untrusted certificate is rejected by default with the reason")
    func untrustedByDefault() async throws {
        try await withTestServer(tls: .init()) { server in
            let log = CollectingLogHandler()
            var configuration = WebSocketConfiguration()
            configuration.logger = log.logger
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("issuer"), "reason: \(reason); log: \(log.diagnostics)")
            // What to do about it: the settings that trust a CA.
            for setting in ["tls.trustedCAPEM", "tls.trustedCAFile", "SSL_CERT_FILE"] {
                #expect(reason.contains(setting), "reason: \(reason)")
            }
        }
    }

    @Test("trusting the generated CA makes the connection work")
    func trustedCA() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            try await connection.send(.text("over TLS"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("over TLS"))
            await connection.close()
            #expect(connection.closeCode == .normalClosure)
        }
    }

    @Test("a second connection to the same server resumes the TLS session, and the server sees it")
    func sessionResumption() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let first = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            #expect(!first.isTLSSessionResumed)
            await first.close()
            let second = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            #expect(second.isTLSSessionResumed)
            try await second.send(.text("resumed"))
            var replies = second.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("resumed"))
            await second.close()
            let seen = server.snapshot.connections
            #expect(seen.map(\.tlsResumed) == [false, true])
        }
    }

    @Test("ReconnectingWebSocket resumes the TLS session on every reconnect")
    func reconnectResumes() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            policy.minimumUptime = .zero
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/close?code=1012&after=20"), configuration: configuration, policy: policy)
            var reconnects = 0
            for await state in socket.states {
                if case .reconnecting = state {
                    reconnects += 1
                    if reconnects == 3 { break }
                }
            }
            await socket.close()
            let resumed = server.snapshot.connections.map(\.tlsResumed)
            #expect(resumed.count >= 3)
            #expect(resumed.first == false)
            #expect(resumed.dropFirst().allSatisfy { $0 }, "resumed: \(resumed)")
        }
    }

    /// The server's TLS layer says goodbye (close_notify) without a WebSocket close frame:
    /// an abnormal end, not the peer breaking the WebSocket protocol.
    @Test("a wss:// drop without a close frame gives 1006, not a protocol error")
    func tlsDrop() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let connection = try await WebSocket.connect(to: server.url(path: "/drop?after=20"), configuration: configuration)
            for await _ in connection.messages {}
            #expect(connection.closeCode == .abnormalClosure)
            if matching(connection.error, .protocolViolation) != nil {
                Issue.record("a TLS drop was reported as a protocol error: \(String(describing: connection.error))")
            }
        }
    }

    @Test("ws:// to a server that speaks TLS fails with a hint to use wss://")
    func plainToTLSPort() async throws {
        try await withTestServer(tls: .init()) { server in
            let plain = "ws://" + server.url(path: "/echo").dropFirst("wss://".count)
            let error = await expectWebSocketError { _ = try await WebSocket.connect(to: plain) }
            guard let reason = reason(of: error, ifCode: .connectionFailed) else {
                Issue.record("expected connectionFailed, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("wss://"), "reason: \(reason)")
        }
    }

    @Test("a certificate for another host name is rejected")
    func hostnameMismatch() async throws {
        try await withTestServer(tls: .init(hostnames: ["other.example"])) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("mismatch"), "reason: \(reason)")
        }
    }

    @Test("an expired certificate is rejected")
    func expired() async throws {
        try await withTestServer(tls: .init(validDays: -1)) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .tlsFailure) else {
                Issue.record("expected tlsFailure, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("expired"), "reason: \(reason)")
        }
    }

    @Test("allowUntrustedCertificates accepts anything")
    func allowUntrusted() async throws {
        try await withTestServer(tls: .init(hostnames: ["other.example"], validDays: -1)) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.allowUntrustedCertificates = true
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            try await connection.send(.text("insecure"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("insecure"))
            await connection.close()
        }
    }

    @Test("a missing CA file is an invalid configuration")
    func missingCAFile() async throws {
        try await withTestServer(tls: .init()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = "/nonexistent/ca.pem"
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let reason = reason(of: error, ifCode: .invalidConfiguration) else {
                Issue.record("expected invalidConfiguration, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("/nonexistent/ca.pem"))
        }
    }
}
