import Foundation
import Synchronization
import Testing
@testable import WebSocketStreams
import SynchronizationSupport
import WebSocketTestServer

/// Behaviours real servers (aiohttp, node `ws`, Python `websockets`, nginx, squid,
/// tinyproxy) showed against the client on libwebsockets' ws role, each imitated by a
/// TestServer route or a test proxy.
@Suite("What real servers showed")
struct RealServerRegressionTests {
    /// 1. An unfragmented message far over maxMessageSize: aborted the process with heap
    /// corruption inside lws. Now: messageTooLarge, 1009 sent, the loop's other
    /// connections unaffected.
    @Test("a 4 MiB and a 16 MiB message over a 1 MiB limit close with 1009, nothing else breaks",
          arguments: [(4 << 20, true), (4 << 20, false), (16 << 20, true), (16 << 20, false)])
    func oversizedMessage(size: Int, compression: Bool) async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "oversized")
            var configuration = WebSocketConfiguration()
            configuration.compression = WebSocketCompression(isEnabled: compression)
            let bystander = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration, eventLoop: loop)
            configuration.maxMessageSize = 1 << 20
            let closesSent = Mutex<[WebSocketCloseCode]>([])
            configuration.wireEventObserver = { event in
                if event.kind == .closeSent, let code = event.closeCode { closesSent.withLock { $0.append(code) } }
            }
            let connection = try await WebSocket.connect(
                to: server.url(path: "/push?count=1&size=\(size)"), configuration: configuration, eventLoop: loop)
            for await _ in connection.messages { Issue.record("no message may arrive") }
            #expect(connection.error == .messageTooLarge(limit: 1 << 20))
            #expect(connection.closeCode == .messageTooBig)
            // The close frame went out whole (when the server reads it depends on the server).
            #expect(closesSent.withLock { $0 } == [.messageTooBig])
            try await bystander.send(.text("still here"))
            var replies = bystander.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("still here"))
            await bystander.close()
            await loop.shutdown()
        }
    }

    /// 2. A 1 MiB text and right after it a 1 MiB binary, keep-alive off: the binary
    /// waited for the next timer (about 20 s), or forever.
    @Test("a 1 MiB text then a 1 MiB binary are both written at once, keep-alive off")
    func backToBackLargeSends() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = nil
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let text = String(repeating: "t", count: 1 << 20)
            let binary = Data(repeating: 0xB5, count: 1 << 20)
            let started = ContinuousClock.now
            try await connection.send(.text(text))
            try await connection.send(.binary(binary))
            var replies = connection.messages.makeAsyncIterator()
            #expect(await replies.next() == .text(text))
            #expect(await replies.next() == .binary(binary))
            // Far below any timer of the connection's: the writes did not wait for one.
            #expect(ContinuousClock.now - started < .seconds(5))
            await connection.close()
        }
    }

    /// 3. `pingInterval: nil` still sent pings; a user `ping()` never returned while the
    /// server flooded pings.
    @Test("pingInterval nil sends no ping; a user ping is answered during a ping flood")
    func pingControl() async throws {
        try await withTestServer { server in
            let pings = Atomic<Int>(0)
            var configuration = WebSocketConfiguration()
            configuration.pingInterval = nil
            configuration.pongTimeout = .milliseconds(300)
            configuration.wireEventObserver = { event in
                if event.kind == .pingSent { pings.add(1, ordering: .relaxed) }
            }
            // A server that never reads: any ping would go unanswered and end the
            // connection with pongTimeout after 300 ms.
            let quiet = try await WebSocket.connect(to: server.url(path: "/stall"), configuration: configuration)
            // Nothing is due on the open connection: no keep-alive ping is scheduled, ever.
            #expect(quiet.connection.machine.withLock { $0.nextDeadline } == nil)
            #expect(quiet.error == nil)
            #expect(quiet.closeCode == nil)
            #expect(pings.load(ordering: .relaxed) == 0)
            // Not closed here: /stall never answers a close frame (that would take the full
            // close timeout); the server's stop ends it.

            configuration.pongTimeout = .seconds(5)
            let flooded = try await WebSocket.connect(to: server.url(path: "/hostile/ping-flood?count=20000"), configuration: configuration)
            // The flood ends with a close frame: the ping either gets its pong first or
            // fails with that close, but it never hangs.
            let started = ContinuousClock.now
            do {
                let roundTrip = try await flooded.ping()
                #expect(roundTrip < .seconds(5))
            } catch let error as WebSocketError {
                #expect(error == .closed(code: .normalClosure, reason: "flood over"))
            }
            #expect(ContinuousClock.now - started < .seconds(5))
            // Every ping of the flood was answered (the peer reads them all).
            let seen = try await server.waitUntil { $0.connections.last?.pongsReceived == 20000 }
            #expect(seen.connections.last?.pongsReceived == 20000)
            await flooded.close()
        }
    }

    /// 4. A peer's 1012, 1013 and 1014 reached the user as 1002, and reconnecting gave up.
    @Test("a peer's 1012, 1013 and 1014 reach the user unchanged", arguments: [1012, 1013, 1014] as [UInt16])
    func restartCodes(code: UInt16) async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/close?code=\(code)&reason=later"))
            for await _ in connection.messages {}
            #expect(connection.closeCode == WebSocketCloseCode(rawValue: code))
            #expect(connection.closeReason == "later")
            #expect(connection.error == nil)
        }
    }

    @Test("ReconnectingWebSocket retries after a peer's 1012, 1013 and 1014", arguments: [1012, 1013, 1014] as [UInt16])
    func restartCodesAreRetried(code: UInt16) async throws {
        try await withTestServer { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            policy.minimumUptime = .zero
            let socket = ReconnectingWebSocket(to: server.url(path: "/close?code=\(code)&after=10"), policy: policy)
            var retries = 0
            for await state in socket.states {
                if case .failed = state { Issue.record("gave up after \(code): \(state)") }
                if case .reconnecting = state {
                    retries += 1
                    if retries == 3 { break }
                }
            }
            #expect(retries == 3)
            #expect(server.snapshot.handshakeCount >= 3)
            await socket.close()
        }
    }

    /// 5. `wss://[::1]` against a certificate with IP SAN ::1 failed (X509 error 62).
    @Test("wss:// to an IP literal verifies against the certificate's IP SAN, and a wrong name still fails",
          arguments: ["::1", "127.0.0.1"])
    func ipLiteralCertificates(host: String) async throws {
        let server = try await TestServer.start(host: host, tls: .init(hostnames: ["localhost", host]))
        var configuration = WebSocketConfiguration()
        configuration.tls.trustedCAFile = server.caCertificateFile
        let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
        try await connection.send(.text("over \(host)"))
        var replies = connection.messages.makeAsyncIterator()
        #expect(await replies.next() == .text("over \(host)"))
        await connection.close()
        // The same server reached by a name its certificate does not carry.
        let other = host == "::1" ? "[::1]" : "127.0.0.1"
        let wrongName = try await TestServer.start(host: host, tls: .init(hostnames: ["example.org"]))
        let error = await expectWebSocketError {
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = wrongName.caCertificateFile
            _ = try await WebSocket.connect(to: "wss://\(other):\(wrongName.port)/echo", configuration: configuration)
        }
        guard let reason = reason(of: error, ifCode: .tlsFailure) else {
            Issue.record("expected tlsFailure, got \(String(describing: error))")
            await server.stop()
            await wrongName.stop()
            return
        }
        #expect(reason.contains("does not name"))
        await server.stop()
        await wrongName.stop()
    }

    /// 6. A CONNECT proxy answering 407 read as `connectionFailed("proxy not h1 (target)")`.
    @Test("a proxy answering 407 is proxyRejected with its challenge; credentials in the proxy URL pass")
    func proxyAuthentication() async throws {
        let proxy = try TestConnectProxy(requiredCredentials: "ann:s3cret")
        defer { proxy.stop() }
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.proxy = "http://127.0.0.1:\(proxy.port)"
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            guard let matched = matching(error, .proxyRejected), let status = matched.httpStatus, let headers = matched.headers else {
                Issue.record("expected proxyRejected, got \(String(describing: error))")
                return
            }
            #expect(status == 407)
            #expect(headers["Proxy-Authenticate"] == "Basic realm=\"test\"")
            #expect(error?.description.contains("requires authentication") == true)

            configuration.proxy = "http://ann:s3cret@127.0.0.1:\(proxy.port)"
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            try await connection.send(.text("through"))
            var replies = connection.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("through"))
            await connection.close()
        }
    }

    /// 7. A 403 with a JSON body: the body was unreachable.
    @Test("a refused upgrade carries its status, headers and body")
    func refusalBody() async throws {
        try await withTestServer { server in
            let json = #"{"error":"forbidden","detail":"no access to this room"}"#
            let encoded = json.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? json
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=403&body=\(encoded)"))
            }
            guard let matched = matching(error, .handshakeRejected), let status = matched.httpStatus, let headers = matched.headers, let body = matched.body else {
                Issue.record("expected handshakeRejected, got \(String(describing: error))")
                return
            }
            #expect(status == 403)
            #expect(headers["Content-Type"]?.hasPrefix("text/plain") == true)
            #expect(String(decoding: body, as: UTF8.self) == json)
        }
    }
}
