import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

/// A refusal of the upgrade as the transport reports it: `status` with `Location: location`.
private func redirect(_ status: Int, to location: String?) -> WebSocketError {
    WebSocketError(code: .handshakeRejected, httpStatus: status, headers: location.map { ["Location": $0] } ?? [:])
}

@Suite("Redirects of the upgrade request, as a value (RFC 9110 15.4, RFC 3986 5.2)")
struct RedirectChainTests {
    private func url(_ text: String) throws -> WebSocketURL { try WebSocketURL(parsing: text) }

    @Test("Location forms: absolute (http and https mapped), scheme-relative, absolute path, relative path, query")
    func resolvingLocations() throws {
        let base = try url("wss://user:pw@api.example.org:8443/v1/feed/live?token=a")
        let cases: [(String, String)] = [
            ("ws://other.example/x", "ws://other.example/x"),
            ("WSS://other.example/x", "wss://other.example/x"),
            ("https://other.example/x?q=1", "wss://other.example/x?q=1"),
            ("http://other.example:8080/x", "ws://other.example:8080/x"),
            ("//cdn.example/x", "wss://cdn.example/x"),
            ("/v2/feed", "wss://api.example.org:8443/v2/feed"),
            ("next", "wss://api.example.org:8443/v1/feed/next"),
            ("../archive/./old?x=2", "wss://api.example.org:8443/v1/archive/old?x=2"),
            ("?token=b", "wss://api.example.org:8443/v1/feed/live?token=b"),
            ("/v2/feed#fragment", "wss://api.example.org:8443/v2/feed"),
            ("  /trimmed  ", "wss://api.example.org:8443/trimmed"),
        ]
        for (location, expected) in cases {
            #expect(try RedirectChain.resolve(location, against: base).description == expected, "\(location)")
        }
        // User info goes on only within a path-relative hop.
        #expect(try RedirectChain.resolve("/v2", against: base).userInfo == "user:pw")
        #expect(try RedirectChain.resolve("https://other.example/", against: base).userInfo == nil)
        #expect(throws: WebSocketError.self) { try RedirectChain.resolve("ftp://files.example/x", against: base) }
        #expect(throws: WebSocketError.self) { try RedirectChain.resolve("mailto:someone@example.org", against: base) }
    }

    @Test("follows each redirect status; other statuses, and maxRedirects 0, leave the error as it was")
    func statuses() throws {
        for status in [301, 302, 303, 307, 308] {
            var chain = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
            #expect(chain.next(after: redirect(status, to: "/y")) == .follow(dropCredentials: false))
            #expect(chain.current.description == "ws://a.example/y")
            #expect(chain.redirects == 1)
        }
        for status in [300, 304, 305, 400, 404, 500] {
            var chain = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
            #expect(chain.next(after: redirect(status, to: "/y")) == .notARedirect)
        }
        // Redirects off: refused, saying so and where it pointed.
        var off = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 0)
        guard case .refuse(let refusal) = off.next(after: redirect(302, to: "/y?room=1")) else {
            Issue.record("a redirect with maxRedirects 0 is refused")
            return
        }
        #expect(refusal.httpStatus == 302)
        #expect(refusal.reason == "the server redirected (302) from ws://a.example/x to ws://a.example/y?room=1, "
            + "and redirects are off (maxRedirects is 0; wsdump: --max-redirects)")
        var timedOut = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
        #expect(timedOut.next(after: .timedOut) == .notARedirect)
    }

    @Test("a redirect from wss to ws is refused, naming both URLs and why")
    func downgradeRefused() throws {
        var chain = RedirectChain(start: try url("wss://a.example/x?token=secret"), maxRedirects: 5)
        guard case .refuse(let error) = chain.next(after: redirect(301, to: "http://a.example/x")) else {
            Issue.record("a downgrade was followed")
            return
        }
        #expect(error.code == .handshakeRejected)
        #expect(error.httpStatus == 301)
        #expect(error.reason == "refused to follow a redirect from wss://a.example/x?token=<redacted> to ws://a.example/x: it would drop TLS (wss to ws)")
        #expect(chain.redirects == 0)
    }

    @Test("a loop and one hop too many are refused with the chain; a missing Location is refused too")
    func loopsAndLimits() throws {
        var loop = RedirectChain(start: try url("ws://a.example/one"), maxRedirects: 5)
        #expect(loop.next(after: redirect(302, to: "/two")) == .follow(dropCredentials: false))
        guard case .refuse(let looped) = loop.next(after: redirect(302, to: "/one")) else {
            Issue.record("a loop was followed")
            return
        }
        #expect(looped.reason == "redirect loop: ws://a.example/one → ws://a.example/two → ws://a.example/one")

        var limited = RedirectChain(start: try url("ws://a.example/0"), maxRedirects: 2)
        #expect(limited.next(after: redirect(307, to: "/1")) == .follow(dropCredentials: false))
        #expect(limited.next(after: redirect(307, to: "/2")) == .follow(dropCredentials: false))
        guard case .refuse(let tooMany) = limited.next(after: redirect(307, to: "/3")) else {
            Issue.record("a third redirect was followed with maxRedirects 2")
            return
        }
        #expect(tooMany.reason == "more than 2 redirects (maxRedirects): ws://a.example/0 → ws://a.example/1 → ws://a.example/2 → ws://a.example/3")

        var missing = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
        guard case .refuse(let noLocation) = missing.next(after: redirect(302, to: nil)) else {
            Issue.record("a redirect without Location was not refused")
            return
        }
        #expect(noLocation.reason?.contains("without a Location") == true)
    }

    @Test("credentials are dropped at the first change of origin (scheme, host or port), and only then")
    func originChanges() throws {
        var chain = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
        #expect(chain.next(after: redirect(302, to: "/same-origin")) == .follow(dropCredentials: false))
        #expect(chain.next(after: redirect(302, to: "ws://a.example:81/port")) == .follow(dropCredentials: true))
        #expect(chain.next(after: redirect(302, to: "ws://b.example/host")) == .follow(dropCredentials: false))
        #expect(chain.crossedOrigin)
        var upgrade = RedirectChain(start: try url("ws://a.example/x"), maxRedirects: 5)
        #expect(upgrade.next(after: redirect(308, to: "wss://a.example/x")) == .follow(dropCredentials: true))

        let headers = [
            "Authorization": "Bearer t", "cookie": "s=1", "PROXY-AUTHORIZATION": "Basic p", "x-api-key": "k",
            "X-Trace": "keep",
        ]
        var sensitive = WebSocketConfiguration().sensitiveHeaders
        #expect(RedirectChain.withoutCredentials(headers, sensitive: sensitive) == ["x-api-key": "k", "X-Trace": "keep"])
        sensitive.insert("X-Api-Key")
        #expect(RedirectChain.withoutCredentials(headers, sensitive: sensitive) == ["X-Trace": "keep"])
    }

    @Test("a chain keeps each hop's query, with secret-looking values redacted")
    func chainKeepsQueriesRedacted() throws {
        var chain = RedirectChain(start: try url("ws://a.example/feed?room=1&token=abc123"), maxRedirects: 1)
        #expect(chain.next(after: redirect(302, to: "/feed?room=2&sig=xyz")) == .follow(dropCredentials: false))
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop"
        guard case .refuse(let refusal) = chain.next(after: redirect(302, to: "/feed?room=3&t=\(jwt)")) else {
            Issue.record("the second redirect is one too many")
            return
        }
        #expect(refusal.reason == "more than 1 redirects (maxRedirects): ws://a.example/feed?room=1&token=<redacted> → "
            + "ws://a.example/feed?room=2&sig=<redacted> → ws://a.example/feed?room=3&t=<redacted>")
        #expect(refusal.reason?.contains("abc123") == false)
        #expect(refusal.reason?.contains("xyz") == false)
    }
}
