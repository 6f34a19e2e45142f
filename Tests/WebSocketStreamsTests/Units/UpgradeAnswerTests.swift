import FoundationEssentials
import Testing
@testable import WebSocketStreams
import WebSocketCore

/// The reader of the server's answer, as the transport and the engine both use it.
private func answerReader(_ url: String = "ws://example.test:8080/feed?token=s3cret") -> UpgradeAnswer {
    UpgradeAnswer(
        url: try! WebSocketURL(parsing: url), key: "dGhlIHNhbXBsZSBub25jZQ==", configuration: WebSocketConfiguration(),
        sha1: { Crypto.sha1($0) })
}

/// Feeds `text` to `answer` one byte at a time; the outcome of the last byte that changed anything.
private func feedBytewise(_ answer: inout UpgradeAnswer, _ bytes: [UInt8]) -> (UpgradeAnswer.Outcome, at: Int) {
    for index in bytes.indices {
        let outcome = [bytes[index]].withUnsafeBytes { answer.read($0) }
        if case .needsMore = outcome { continue }
        return (outcome, index)
    }
    return (.needsMore, bytes.count)
}

@Suite("UpgradeAnswer: the server's answer to the upgrade request, read once for production and the engine")
struct UpgradeAnswerTests {
    @Test("a valid 101 read a byte at a time opens on its last byte; the frames after it start where it ends")
    func upgradedBytewise() {
        var answer = answerReader()
        // RFC 6455 section 1.3's sample key and accept value.
        let head = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n".utf8)
        let (outcome, index) = feedBytewise(&answer, head)
        guard case .upgraded(let negotiated, let framesStart) = outcome else {
            Issue.record("upgraded, got \(outcome)")
            return
        }
        #expect(index == head.count - 1, "the answer is complete only at its last byte")
        #expect(framesStart == 1, "the byte that completed the head was its last")
        #expect(negotiated.subprotocol == nil && negotiated.extensions == nil)
        #expect(answer.head?.status == 101)
        // In one piece with a frame behind it, the frame starts right after the head.
        var whole = answerReader()
        let withFrame = head + [0x81, 0x00]
        guard case .upgraded(_, let start) = withFrame.withUnsafeBytes({ whole.read($0) }) else {
            Issue.record("upgraded in one piece")
            return
        }
        #expect(start == head.count)
    }

    @Test("a 401 is collected to the end of its body, split anywhere, then fails with the status, headers and body")
    func refusalWithBody() {
        var answer = answerReader()
        let bytes = Array("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 12\r\n\r\ntoken expired".utf8)
        let (outcome, index) = feedBytewise(&answer, bytes)
        guard case .failed(let error) = outcome else {
            Issue.record("failed, got \(outcome)")
            return
        }
        #expect(index == bytes.count - 2, "the body's twelfth byte ends the answer; the thirteenth is not read")
        #expect(error.code == .handshakeRejected)
        #expect(error.httpStatus == 401)
        #expect(error.headers?["www-authenticate"] == "Bearer" || error.headers?["WWW-Authenticate"] == "Bearer")
        #expect(error.body == Data("token expire".utf8))
    }

    @Test("a 200 or a 404 says no WebSocket endpoint is at the path, without the query that may carry a token")
    func noEndpoint() {
        for status in ["200 OK", "404 Not Found"] {
            var answer = answerReader()
            let bytes = Array("HTTP/1.1 \(status)\r\nContent-Length: 0\r\n\r\n".utf8)
            guard case .failed(let error) = bytes.withUnsafeBytes({ answer.read($0) }) else {
                Issue.record("\(status) fails the handshake")
                continue
            }
            #expect(error.code == .handshakeRejected)
            #expect(error.reason == "no WebSocket endpoint at /feed on example.test:8080")
            #expect(error.reason?.contains("s3cret") == false)
        }
    }

    @Test("a refusal whose body is cut short by the close or the timeout reports the body as far as it came")
    func refusalCutShort() {
        for closed in [true, false] {
            var answer = answerReader()
            let bytes = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\nbusy".utf8)
            guard case .needsMore = bytes.withUnsafeBytes({ answer.read($0) }) else {
                Issue.record("the body is not complete")
                continue
            }
            #expect(answer.isReadingRefusal)
            let error = answer.refusalCutShort(connectionClosed: closed)
            #expect(error?.httpStatus == 503)
            #expect(error?.body == Data("busy".utf8))
            #expect(answer.refusalCutShort(connectionClosed: closed) == nil, "reported once")
        }
        var reading = answerReader()
        #expect(reading.refusalCutShort(connectionClosed: true) == nil, "no refusal while the head is read")
    }

    @Test("a TLS record in answer to ws:// says to use wss://; other bytes that are not HTTP say so")
    func notHTTP() {
        var plain = answerReader()
        let alert: [UInt8] = [0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]
        guard case .failed(let tlsError) = alert.withUnsafeBytes({ plain.read($0) }) else {
            Issue.record("a TLS alert fails the handshake")
            return
        }
        #expect(tlsError.reason == "the server answered in TLS, not HTTP (example.test:8080): use wss:// for this server")
        var garbage = answerReader()
        guard case .failed(let error) = Array("SSH-2.0-OpenSSH\r\n\r\n".utf8).withUnsafeBytes({ garbage.read($0) }) else {
            Issue.record("an SSH banner fails the handshake")
            return
        }
        #expect(error.code == .connectionFailed)
        #expect(error.reason?.hasPrefix("the server's answer to the upgrade request is not valid HTTP") == true)
    }

    @Test("the engine reads the answer as the transport does: a 404 through ClientEngine has the transport's wording")
    func engineAgreesWithTransport() {
        let now = ContinuousClock.now
        var engine = ClientEngine(
            url: try! WebSocketURL(parsing: "ws://example.test:8080/feed?token=s3cret"), now: now,
            keyBytes: Array(repeating: 0, count: 16), maskingKeys: .seeded(1))
        _ = engine.takeOutput(budget: 4096, now: now)
        engine.receive(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8), now: now)
        guard case .ended(let ending)? = engine.takeEvents(now: now).last else {
            Issue.record("the engine ends")
            return
        }
        #expect(ending.error?.reason == "no WebSocket endpoint at /feed on example.test:8080")
    }
}
