import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

@Suite("WebSocketURL parsing")
struct WebSocketURLTests {
    @Test("defaults and the Host header")
    func defaults() throws {
        let plain = try WebSocketURL(parsing: "ws://Example.org")
        #expect(plain.host == "example.org")
        #expect(plain.port == 80)
        #expect(plain.pathAndQuery == "/")
        #expect(plain.hostHeader == "example.org")
        #expect(!plain.isSecure)

        let secure = try WebSocketURL(parsing: "wss://example.org:8443/feed?x=1")
        #expect(secure.isSecure)
        #expect(secure.port == 8443)
        #expect(secure.pathAndQuery == "/feed?x=1")
        #expect(secure.hostHeader == "example.org:8443")
        #expect(secure.description == "wss://example.org:8443/feed?x=1")
    }

    @Test("IPv6 literals, query-only paths and user info")
    func specialForms() throws {
        let ipv6 = try WebSocketURL(parsing: "ws://[::1]:9001/echo")
        #expect(ipv6.host == "::1")
        #expect(ipv6.isIPv6Literal)
        #expect(ipv6.hostHeader == "[::1]:9001")

        let queryOnly = try WebSocketURL(parsing: "ws://host?token=abc")
        #expect(queryOnly.pathAndQuery == "/?token=abc")

        let user = try WebSocketURL(parsing: "wss://alice:p%40ss@host/")
        #expect(user.userInfo == "alice:p%40ss")
        #expect(user.basicAuthorization == "Basic YWxpY2U6cEBzcw==")
        #expect(user.description == "wss://host/")
    }

    @Test("ws+unix: and wss+unix: name the socket's path, then the request path")
    func unixSocketURLs() throws {
        let full = try WebSocketURL(parsing: "ws+unix:///run/app.sock:/feed?x=1")
        #expect(full.unixSocketPath == "/run/app.sock")
        #expect(full.pathAndQuery == "/feed?x=1")
        #expect(full.hostHeader == "localhost")
        #expect(!full.isSecure)
        #expect(full.description == "ws+unix:///run/app.sock:/feed?x=1")

        let bare = try WebSocketURL(parsing: "wss+unix:/run/app.sock")
        #expect(bare.isSecure)
        #expect(bare.unixSocketPath == "/run/app.sock")
        #expect(bare.pathAndQuery == "/")
        #expect(bare.host == "localhost")

        let relative = try WebSocketURL(parsing: "WS+UNIX://app.sock:?q")
        #expect(relative.unixSocketPath == "app.sock")
        #expect(relative.pathAndQuery == "/?q")

        #expect(try WebSocketURL(parsing: "ws://h/").unixSocketPath == nil)
    }

    @Test("bad ws+unix: URLs say why", arguments: [
        ("ws+unix://", "path is missing"), ("ws+unix://:/x", "path is missing"),
        ("ws+unix:///s.sock:x", "must start with '/'"), ("ws+unix:///s.sock:/#f", "fragment"),
        ("ws+unix:///" + String(repeating: "a", count: 120), "107 bytes"),
    ])
    func badUnixSocketURLs(url: String, expected: String) {
        #expect {
            try WebSocketURL(parsing: url)
        } throws: { error in
            guard let error = reported(error), error.code == .invalidURL else { return false }
            return error.reason?.contains(expected) ?? false
        }
    }

    @Test("rejections say why", arguments: [
        ("ftp://host/", "scheme"), ("ws://:80/", "host"), ("ws://host:99999/", "port"),
        ("ws://host/#top", "fragment"), ("ws://ho st/", "space"), ("host/path", "expected"),
    ])
    func rejections(url: String, reason expected: String) {
        #expect {
            _ = try WebSocketURL(parsing: url)
        } throws: { error in
            guard let text = reason(of: reported(error), ifCode: .invalidURL) else { return false }
            return text.contains(expected)
        }
    }
}

@Suite("Proxy URL parsing")
struct ProxyAddressTests {
    @Test("host, port and credentials")
    func parse() throws {
        let proxy = try ProxyAddress(parsing: "http://user:pw@proxy.local:3128")
        #expect(proxy.host == "proxy.local")
        #expect(proxy.port == 3128)
        #expect(proxy.userInfo == "user:pw")
        let bare = try ProxyAddress(parsing: "127.0.0.1:8080/")
        #expect(bare.host == "127.0.0.1" && bare.port == 8080 && bare.userInfo == nil)
        let ipv6 = try ProxyAddress(parsing: "http://[::1]:3128")
        #expect(ipv6.host == "::1" && ipv6.port == 3128)
    }

    @Test("the CONNECT request names the target with its port, and carries Basic credentials")
    func connectRequest() throws {
        let proxy = try ProxyAddress(parsing: "http://us%40er:p%3Aw@proxy.local:3128")
        let request = proxy.connectRequest(to: try WebSocketURL(parsing: "wss://example.org/feed"))
        #expect(String(decoding: request, as: UTF8.self) == "CONNECT example.org:443 HTTP/1.1\r\n"
            + "Host: example.org:443\r\n"
            + "Proxy-Authorization: Basic dXNAZXI6cDp3\r\n\r\n")
        let ipv6 = try ProxyAddress(parsing: "http://127.0.0.1:3128").connectRequest(to: try WebSocketURL(parsing: "ws://[::1]:9001/"))
        #expect(String(decoding: ipv6, as: UTF8.self) == "CONNECT [::1]:9001 HTTP/1.1\r\nHost: [::1]:9001\r\n\r\n")
    }

    @Test("a missing port or another scheme is an invalid configuration", arguments: ["http://proxy", "https://proxy:443", "http://:80"])
    func rejections(text: String) {
        #expect(throws: ConnectFailure.self) { _ = try ProxyAddress(parsing: text) }
    }
}
