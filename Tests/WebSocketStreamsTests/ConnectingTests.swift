import FoundationEssentials
import InMemoryTracing
import MetricsTestKit
import Synchronization
import SynchronizationSupport
import Testing
import Tracing
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("Redirects of the upgrade request, against the test server")
struct RedirectTests {
    @Test("relative redirects are followed through several hops; the connection reports the last URL and the hops")
    func relativeHops() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/redirect?hops=3&to=/echo"))
            #expect(connection.url == server.url(path: "/echo"))
            #expect(connection.connectTimings.redirects == 3)
            try await connection.send(.text("after three redirects"))
            var replies = connection.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("after three redirects"))
            await connection.close()
            let seen = server.snapshot
            #expect(seen.rejectedHandshakes.map(\.status) == [302, 302, 302])
            #expect(seen.connections.map(\.path) == ["/echo"])
        }
    }

    @Test("each redirect status is followed to an absolute http:// Location, mapped to ws://")
    func absoluteLocation() async throws {
        try await withTestServer { server in
            for status in [301, 302, 303, 307, 308] {
                let target = "http://127.0.0.1:\(server.port)/echo"
                let connection = try await WebSocket.connect(to: server.url(path: "/redirect?status=\(status)&to=\(target)"))
                #expect(connection.url == "ws://127.0.0.1:\(server.port)/echo")
                await connection.close()
            }
            #expect(server.snapshot.rejectedHandshakes.map(\.status) == [301, 302, 303, 307, 308])
        }
    }

    @Test("a loop, too many hops, and maxRedirects 0 each fail with handshakeRejected saying which")
    func refusals() async throws {
        try await withTestServer { server in
            let looped = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(path: "/redirect?loop=1")) }
            #expect(reason(of: looped, ifCode: .handshakeRejected)?.hasPrefix("redirect loop: ") == true)

            let tooMany = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(path: "/redirect?hops=6")) }
            let tooManyReason = reason(of: tooMany, ifCode: .handshakeRejected) ?? ""
            #expect(tooManyReason.hasPrefix("more than 5 redirects (maxRedirects): ws://127.0.0.1:\(server.port)/redirect?hops=6 → "))
            // Each hop keeps its query, so the hops read apart.
            #expect(tooManyReason.contains("/redirect?to=%2Fecho&hops=5 → "))
            #expect(tooMany?.httpStatus == 302)

            var off = WebSocketConfiguration()
            off.maxRedirects = 0
            let unfollowed = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/redirect?to=/echo"), configuration: off)
            }
            #expect(unfollowed?.code == .handshakeRejected)
            #expect(unfollowed?.httpStatus == 302)
            #expect(unfollowed?.header(named: "location") == "/echo")
            #expect(unfollowed?.description.contains("redirects are off (maxRedirects is 0") == true)
            #expect(unfollowed?.description.contains("to ws://127.0.0.1:\(server.port)/echo") == true)
        }
    }

    @Test("a redirect from wss:// to ws:// is refused before anything is sent to the plain URL")
    func downgradeRefused() async throws {
        try await withTestServer(tls: .init()) { secure in
            try await withTestServer { plain in
                var configuration = WebSocketConfiguration()
                configuration.tls.trustedCAFile = secure.caCertificateFile
                let error = await expectWebSocketError {
                    _ = try await WebSocket.connect(
                        to: secure.url(path: "/redirect?to=ws://127.0.0.1:\(plain.port)/echo"), configuration: configuration)
                }
                #expect(reason(of: error, ifCode: .handshakeRejected)?.contains("it would drop TLS (wss to ws)") == true)
                #expect(plain.snapshot.connections.isEmpty)
            }
        }
    }

    @Test("Authorization and Cookie go on within an origin and are dropped when a hop changes it")
    func credentialsStayWithTheirOrigin() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.headers = ["Authorization": "Bearer secret", "Cookie": "session=1", "X-Test": "kept"]
            configuration.resolver = WebSocketResolver { _ in ["127.0.0.1"] }
            let same = try await WebSocket.connect(to: server.url(path: "/redirect?to=/headers"), configuration: configuration)
            await same.close()
            let other = "ws://other.test:\(server.port)/headers"
            let crossed = try await WebSocket.connect(to: server.url(path: "/redirect?to=\(other)"), configuration: configuration)
            #expect(crossed.url == other)
            await crossed.close()
            let headers = server.snapshot.connections.map(\.headers)
            #expect(headers.count == 2)
            #expect(headers.first?["authorization"] == "Bearer secret")
            #expect(headers.first?["cookie"] == "session=1")
            #expect(headers.last?["authorization"] == nil)
            #expect(headers.last?["cookie"] == nil)
            #expect(headers.last?["x-test"] == "kept")
            #expect(headers.last?["host"] == "other.test:\(server.port)")
        }
    }

    @Test("the wire-event observer sees every hop's request and answer")
    func observerSeesEachHop() async throws {
        try await withTestServer { server in
            let events = AnnotatedMutex<[WebSocketWireEvent]>([])
            var configuration = WebSocketConfiguration()
            configuration.wireEventObserver = { event in events.withLock { $0.append(event) } }
            let connection = try await WebSocket.connect(to: server.url(path: "/redirect?hops=2"), configuration: configuration)
            await connection.close()
            let heads = events.withLock { $0 }.filter { $0.kind == .handshakeResponseReceived }.compactMap(\.httpHead)
            #expect(heads.count == 3)
            #expect(heads.prefix(2).allSatisfy { $0.hasPrefix("HTTP/1.1 302") })
            #expect(heads.last?.hasPrefix("HTTP/1.1 101") == true)
        }
    }

    @Test("a ReconnectingWebSocket reconnects to the URL it was given, redirect and all")
    func reconnectingStartsOver() async throws {
        try await withTestServer { server in
            var policy = ReconnectPolicy()
            policy.initialDelay = .milliseconds(20)
            let socket = ReconnectingWebSocket(to: server.url(path: "/redirect?to=/echo"), policy: policy)
            try await socket.send(.text("first"))
            var messages = socket.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("first"))
            await server.disconnectAll()
            try await socket.send(.text("second"))
            #expect(await messages.next() == .text("second"))
            await socket.close()
            let seen = server.snapshot
            #expect(seen.rejectedHandshakes.filter { $0.path == "/redirect" }.count == 2)
            #expect(seen.connections.map(\.path) == ["/echo", "/echo"])
        }
    }
}

@Suite("The local address, and the handshake's phase timings, against the test server")
struct LocalAddressAndTimingTests {
    @Test("localAddress sets the source address the server sees")
    func boundSource() async throws {
        try await withTestServer { server in
            for source in ["127.0.0.5", "127.0.0.6"] {
                var configuration = WebSocketConfiguration()
                configuration.localAddress = source
                let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
                await connection.close()
            }
            #expect(server.snapshot.connections.map(\.peerAddress) == ["127.0.0.5", "127.0.0.6"])
        }
    }

    @Test("a localAddress of the wrong family, or not an address, fails saying so")
    func unusableLocalAddress() async throws {
        try await withTestServer { server in
            var ipv6 = WebSocketConfiguration()
            ipv6.localAddress = "::1"
            let numeric = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: ipv6) }
            #expect(reason(of: numeric, ifCode: .connectionFailed) == "localAddress ::1 is IPv6; it cannot reach 127.0.0.1:\(server.port)")
            ipv6.resolver = WebSocketResolver { _ in ["127.0.0.1", "127.0.0.2"] }
            let named = await expectWebSocketError {
                _ = try await WebSocket.connect(to: "ws://v4only.test:\(server.port)/echo", configuration: ipv6)
            }
            #expect(reason(of: named, ifCode: .connectionFailed)
                == "no address of v4only.test (127.0.0.1, 127.0.0.2) is IPv6 like localAddress ::1")
            var interface = WebSocketConfiguration()
            interface.localAddress = "eth0"
            let invalid = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), configuration: interface) }
            #expect(reason(of: invalid, ifCode: .invalidConfiguration)?.contains("'eth0' is not a numeric") == true)
        }
    }

    @Test("ws:// timings: no name to resolve, one TCP attempt, the upgrade, a total that covers them")
    func plainTimings() async throws {
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url())
            let timings = connection.connectTimings
            await connection.close()
            #expect(timings.nameResolution == nil)
            #expect(timings.connectionAttempts == 1)
            #expect(timings.remoteAddress == "127.0.0.1:\(server.port)")
            #expect(timings.tcpConnect > .zero)
            #expect(timings.upgrade > .zero)
            #expect(timings.tlsHandshake == nil)
            #expect(timings.proxyTunnel == nil)
            #expect(timings.total >= timings.tcpConnect + timings.upgrade)
            #expect(timings.description.contains("tcp "))
        }
    }

    @Test("a resolved name with a refusing first address: dns timed, two attempts, the winner's address")
    func racedTimings() async throws {
        try await withTestServer { server in
            var configuration = WebSocketConfiguration()
            configuration.resolver = WebSocketResolver { _ in ["127.0.0.2", "127.0.0.1"] }
            let connection = try await WebSocket.connect(to: "ws://raced.test:\(server.port)/echo", configuration: configuration)
            let timings = connection.connectTimings
            await connection.close()
            #expect(timings.nameResolution != nil)
            #expect(timings.connectionAttempts == 2)
            #expect(timings.remoteAddress == "127.0.0.1:\(server.port)")
        }
    }

    @Test("wss:// timings: the TLS handshake, resumed on the second connection; phases go to swift-metrics")
    func tlsTimingsAndMetrics() async throws {
        try await withTestServer(tls: .init()) { server in
            let metrics = TestMetrics()
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            configuration.metrics.factory = metrics
            var all: [WebSocketConnectTimings] = []
            for _ in 0..<2 {
                let connection = try await WebSocket.connect(to: server.url(), configuration: configuration)
                all.append(connection.connectTimings)
                await connection.close()
            }
            #expect(all.map { $0.tlsHandshake != nil } == [true, true])
            #expect(all.map(\.isTLSSessionResumed) == [false, true])
            #expect(all[1].description.contains("(resumed)"))
            for phase in ["tcp", "tls", "upgrade"] {
                let timer = try metrics.expectTimer("websocket_client_connect_phase_duration", [("phase", phase)])
                #expect(timer.values.count == 2, "\(phase)")
            }
            #expect(metrics.timers(label: "websocket_client_connect_phase_duration", dimensions: [("phase", "dns")]).isEmpty)
        }
    }
}

@Suite("Tracing the connect with swift-distributed-tracing (InMemoryTracer), against the test server")
struct ConnectTracingTests {
    @Test("one client span per connect, with the request's attributes, and its context injected into the upgrade request")
    func spanAndInjection() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            let path = "/redirect?to=%2Fheaders%3Fcustom%3Din-memory-trace-id%2Cin-memory-span-id"
            let connection = try await withTracer(tracer) {
                try await WebSocket.connect(to: server.url(path: path))
            }
            await connection.close()
            let spans = tracer.finishedSpans
            #expect(spans.count == 1)
            let span = try #require(spans.first)
            #expect(span.operationName == "WebSocket connect")
            #expect(span.kind == .client)
            #expect(span.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            #expect(span.attributes["server.port"]?.toSpanAttribute() == .int64(Int64(server.port)))
            #expect(span.attributes["network.peer.address"]?.toSpanAttribute() == .string("127.0.0.1"))
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(101))
            #expect(span.attributes["http.request.resend_count"]?.toSpanAttribute() == .int64(1))
            #expect(span.attributes["url.full"]?.toSpanAttribute() == .string(server.url(path: "/redirect")))
            let headers = try #require(server.snapshot.connections.last?.headers)
            #expect(headers["in-memory-trace-id"] == span.traceID)
            #expect(headers["in-memory-span-id"] == span.spanID)
        }
    }

    @Test("a failed connect ends its span with the error's type and status; without a tracer nothing is injected")
    func failureAndNoTracer() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            await withTracer(tracer) {
                _ = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(path: "/reject?status=403")) }
            }
            let span = try #require(tracer.finishedSpans.first)
            #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("handshakeRejected"))
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(403))
            #expect(span.status?.code == .error)
            #expect(span.errors.count == 1)

            let untraced = try await WebSocket.connect(to: server.url(path: "/headers?custom=in-memory-trace-id"))
            await untraced.close()
            #expect(server.snapshot.connections.last?.headers["in-memory-trace-id"] == nil)
            #expect(server.snapshot.connections.last?.headers["traceparent"] == nil)
        }
    }
}
