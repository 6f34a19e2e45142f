import Synchronization
import SynchronizationSupport
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("Wire events")
struct WireEventTests {
    /// Collects what a connection reports to ``WebSocketConfiguration/wireEventObserver``.
    final class Recorder: Sendable {
        let events = Mutex<[WebSocketWireEvent]>([])

        func observe(into configuration: inout WebSocketConfiguration) {
            configuration.wireEventObserver = { event in self.events.withLock { $0.append(event) } }
        }

        var all: [WebSocketWireEvent] { events.withLock { $0 } }

        func first(_ kind: WebSocketWireEvent.Kind) -> WebSocketWireEvent? {
            all.first { $0.kind == kind }
        }
    }

    @Test("the real handshake is reported: request as written, response head as parsed, secrets redacted")
    func handshake() async throws {
        try await withTestServer { server in
            let recorder = Recorder()
            var configuration = WebSocketConfiguration()
            configuration.headers = ["Authorization": "Bearer s3cr3t-t0ken", "X-Trace": "abc"]
            configuration.subprotocols = ["chat"]
            recorder.observe(into: &configuration)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            await connection.close()

            let request = try #require(recorder.first(.handshakeRequestSent)?.httpHead)
            let response = try #require(recorder.first(.handshakeResponseReceived)?.httpHead)
            // The request came first, then the response, then the frames.
            #expect(recorder.all.map(\.kind).prefix(2) == [.handshakeRequestSent, .handshakeResponseReceived])
            #expect(request.hasPrefix("GET /echo HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"))
            #expect(request.hasSuffix("\r\n\r\n"))
            #expect(request.contains("Authorization: <redacted>\r\n"))
            #expect(!request.contains("s3cr3t"))
            #expect(request.contains("X-Trace: abc\r\n"))
            #expect(request.contains("Sec-WebSocket-Protocol: chat\r\n"))
            // The key is the one sent, not a placeholder: the server's accept value matches it.
            let key = try #require(request.split(separator: "\r\n").first { $0.hasPrefix("Sec-WebSocket-Key: ") })
                .dropFirst("Sec-WebSocket-Key: ".count)
            #expect(response.hasPrefix("HTTP/1.1 101 "))
            #expect(response.contains("Sec-WebSocket-Accept: \(HandshakeRequest.acceptValue(forKey: String(key), sha1: Crypto.sha1))\r\n"))
            #expect(response.hasSuffix("\r\n\r\n"))
        }
    }

    @Test("with redactsSecretsInLogs off the handshake shows credentials as sent")
    func handshakeUnredacted() async throws {
        try await withTestServer { server in
            let recorder = Recorder()
            var configuration = WebSocketConfiguration()
            configuration.headers = ["Authorization": "Bearer s3cr3t-t0ken"]
            configuration.redactsSecretsInLogs = false
            recorder.observe(into: &configuration)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo?token=abcdef"), configuration: configuration)
            await connection.close()
            let request = try #require(recorder.first(.handshakeRequestSent)?.httpHead)
            #expect(request.hasPrefix("GET /echo?token=abcdef HTTP/1.1\r\n"))
            #expect(request.contains("Authorization: Bearer s3cr3t-t0ken\r\n"))
        }
    }

    @Test("a refused upgrade still reports its response head")
    func rejectedHandshake() async throws {
        try await withTestServer { server in
            let recorder = Recorder()
            var configuration = WebSocketConfiguration()
            recorder.observe(into: &configuration)
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/reject?status=401"), configuration: configuration)
            }
            #expect(error?.code == .handshakeRejected)
            let response = try #require(recorder.first(.handshakeResponseReceived)?.httpHead)
            #expect(response.hasPrefix("HTTP/1.1 401"))
        }
    }

    @Test("pings, pongs and closes are reported with their details")
    func controlFrames() async throws {
        try await withTestServer { server in
            let recorder = Recorder()
            var configuration = WebSocketConfiguration()
            recorder.observe(into: &configuration)
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            let roundTrip = try await connection.ping()
            await connection.close(code: .goingAway, reason: "bye")
            let kinds = recorder.all.map(\.kind).filter { $0 != .handshakeRequestSent && $0 != .handshakeResponseReceived }
            #expect(kinds == [.pingSent, .pongReceived, .closeSent, .closeReceived])
            #expect(recorder.first(.pingSent)?.isKeepalive == false)
            // From the ping on the wire to its pong: within the round trip ping() measures
            // from its call.
            let observed = try #require(recorder.first(.pongReceived)?.roundTrip)
            #expect(observed > .zero && observed <= roundTrip)
            #expect(recorder.first(.closeSent).map { [$0.closeCode, $0.closeReason] as [AnyHashable?] }
                == [WebSocketCloseCode.goingAway, "bye"])
            #expect(recorder.first(.closeSent)?.httpHead == nil)
        }
    }

    @Test("a response's Set-Cookie values are hidden unless redaction is off")
    func responseCookies() throws {
        let head = HTTPResponseHead(
            version: "HTTP/1.1", status: 101, reasonPhrase: "Switching Protocols",
            headers: [.init(name: "set-cookie", value: "session=abc"), .init(name: "Sec-WebSocket-Accept", value: "xyz=")])
        #expect(ClientTransport.responseText(head, redactor: nil, redactsCookies: true)
            == "HTTP/1.1 101 Switching Protocols\r\nset-cookie: <redacted>\r\nSec-WebSocket-Accept: xyz=\r\n\r\n")
        #expect(ClientTransport.responseText(head, redactor: nil, redactsCookies: false).contains("set-cookie: session=abc\r\n"))
    }

    @Test("events describe themselves as trace lines")
    func descriptions() {
        #expect(WebSocketWireEvent.pingSent(keepalive: true).description == "> ping (keep-alive)")
        #expect(WebSocketWireEvent.pongReceived(roundTrip: .microseconds(420)).description == "< pong (0.42 ms)")
        #expect(WebSocketWireEvent.closeReceived(code: .goingAway, reason: "x").description == #"< close: 1001 (going away) "x""#)
        #expect(WebSocketWireEvent.handshakeRequestSent(head: "GET / HTTP/1.1\r\nHost: h\r\n\r\n").description == "> GET / HTTP/1.1")
        #expect(WebSocketWireEvent.Kind.pongReceived.description == "pongReceived")
        #expect(!WebSocketWireEvent.Kind.closeReceived.isSent && WebSocketWireEvent.Kind.closeSent.isSent)
    }

    /// The project's rule: no user code while a lock is held. A flush holds the write side
    /// (``ClientConnection/writeSide``); the observer hears of its ping and close frames
    /// only once it is released.
    @Test("the wire-event observer runs after the write side is released")
    func observerRunsOutsideTheWriteSide() async throws {
        try await withTestServer { server in
            let core = AnnotatedMutex<ClientConnection?>(nil)
            let calls = Atomic<Int>(0)
            let underLock = Atomic<Int>(0)
            var configuration = WebSocketConfiguration()
            configuration.wireEventObserver = { event in
                guard event.kind == .pingSent || event.kind == .closeSent, let connection = core.withLock({ $0 }) else { return }
                calls.add(1, ordering: .relaxed)
                if connection.writeSide.withLockIfAvailable({ _ in true }) == nil { underLock.add(1, ordering: .relaxed) }
            }
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            core.withLock { $0 = connection.connection }
            _ = try await connection.ping()
            await connection.close()
            core.withLock { $0 = nil }  // the observer's box held the connection: no cycle left behind
            #expect(calls.load(ordering: .relaxed) == 2)
            #expect(underLock.load(ordering: .relaxed) == 0, "the observer ran while the write side was held")
        }
    }
}

