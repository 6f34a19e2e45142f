import Testing
import WebSocketStreams
@testable import wsdump

@Suite("Redaction")
struct RedactionTests {
    let redactor = Redactor(showsSecrets: false)

    @Test(arguments: ["Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-Auth-Token", "X-Client-Secret",
                      "X-Password", "X-API-Key"])
    func secretHeadersAreHidden(name: String) {
        #expect(redactor.headerValue("s3cr3t", name: name) == "<redacted>")
        #expect(Redactor(showsSecrets: true).headerValue("s3cr3t", name: name) == "s3cr3t")
    }

    @Test func otherHeadersAreShown() {
        #expect(redactor.headerValue("text/plain", name: "Content-Type") == "text/plain")
        #expect(redactor.headerValue("chat", name: "Sec-WebSocket-Protocol") == "chat")
        // A nonce and its hash, not credentials.
        #expect(redactor.headerValue("dGhlIHNhbXBsZSBub25jZQ==", name: "Sec-WebSocket-Key") == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(redactor.headerValue("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", name: "Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func urlUserInfoAndSecretQueryValuesAreHidden() {
        #expect(redactor.url("wss://user:pw@example.org:8443/feed?token=abc&room=1&api_key=k")
            == "wss://<redacted>@example.org:8443/feed?token=<redacted>&room=1&api_key=<redacted>")
        #expect(redactor.url("ws://h/p?Auth=x&flag") == "ws://h/p?Auth=<redacted>&flag")
        #expect(redactor.url("/only/a/path?password=x") == "/only/a/path?password=<redacted>")
        #expect(redactor.url("ws://h/plain") == "ws://h/plain")
        #expect(Redactor(showsSecrets: true).url("ws://u:p@h/?token=t") == "ws://u:p@h/?token=t")
    }
}
