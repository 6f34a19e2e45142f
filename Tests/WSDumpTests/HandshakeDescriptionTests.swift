import Testing
import WebSocketStreams
@testable import wsdump

@Suite("Handshake description")
struct HandshakeDescriptionTests {
    @Test func requestIsShownAsSentWithSecretNamedValuesHidden() throws {
        let head = "GET /feed?token=abc&room=1 HTTP/1.1\r\nHost: example.org:8080\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + "X-Session-Token: t0k3n\r\nX-Trace: a, b\r\n\r\n"
        let lines = HandshakeDescription.lines(
            for: .handshakeRequestSent(head: head), proxy: "http://user:pw@proxy:3128", redactor: Redactor(showsSecrets: false))
        #expect(lines == [
            "--- request header ---",
            "GET /feed?token=<redacted>&room=1 HTTP/1.1",
            "Host: example.org:8080",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "X-Session-Token: <redacted>",
            "X-Trace: a, b",
            "(through the proxy http://<redacted>@proxy:3128)",
            "-----------------------",
        ])
        let shown = HandshakeDescription.lines(for: .handshakeRequestSent(head: head), redactor: Redactor(showsSecrets: true))
        #expect(shown?.contains("X-Session-Token: t0k3n") == true)
        #expect(shown?.contains("GET /feed?token=abc&room=1 HTTP/1.1") == true)
    }

    @Test func responseKeepsStatusAndAcceptValue() {
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
            + "Set-Cookie: id=42\r\n\r\n"
        #expect(HandshakeDescription.lines(for: .handshakeResponseReceived(head: head), redactor: Redactor(showsSecrets: false)) == [
            "--- response header ---",
            "HTTP/1.1 101 Switching Protocols",
            "Upgrade: websocket",
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Set-Cookie: <redacted>",
            "-----------------------",
        ])
    }

    @Test func controlFramesAreNotHandshakes() {
        #expect(HandshakeDescription.lines(for: .pingSent(keepalive: true), redactor: Redactor(showsSecrets: false)) == nil)
    }
}
