import Testing
@testable import WebSocketCore
@testable import WebSocketStreams

@Suite("SOCKS5 handshake (RFC 1928, RFC 1929)")
struct SOCKS5HandshakeTests {
    private func handshake(_ destination: SOCKS5Handshake.Destination = .address([127, 0, 0, 1]), port: Int = 9001,
                           credentials: (user: String, password: String)? = nil) -> SOCKS5Handshake {
        SOCKS5Handshake(destination: destination, port: port, credentials: credentials, proxyName: "SOCKS5 proxy p:1080")
    }

    @Test("no authentication: greeting, method 0, CONNECT to an IPv4 address, success")
    func withoutAuthentication() throws {
        var socks = handshake()
        #expect(socks.greeting == [0x05, 0x01, 0x00])
        #expect(try socks.receive([0x05, 0x00]) == .send([0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0x23, 0x29]))
        #expect(try socks.receive([0x05, 0x00, 0x00, 0x01, 10, 0, 0, 1, 0x04, 0x38]) == .tunnelOpen(leftover: []))
    }

    @Test("username/password: offered, sent as RFC 1929 says, then CONNECT by name")
    func withCredentials() throws {
        var socks = handshake(.hostName("example.org"), port: 443, credentials: ("ann", "pw"))
        #expect(socks.greeting == [0x05, 0x02, 0x00, 0x02])
        #expect(try socks.receive([0x05, 0x02]) == .send([0x01, 3] + Array("ann".utf8) + [2] + Array("pw".utf8)))
        #expect(try socks.receive([0x01, 0x00]) == .send([0x05, 0x01, 0x00, 0x03, 11] + Array("example.org".utf8) + [0x01, 0xBB]))
        // A domain-name reply, followed by the server's first bytes in the same read.
        let reply: [UInt8] = [0x05, 0x00, 0x00, 0x03, 4] + Array("host".utf8) + [0, 80]
        #expect(try socks.receive(reply + [0x48, 0x54]) == .tunnelOpen(leftover: [0x48, 0x54]))
    }

    @Test("an IPv6 destination and a reply that arrives one byte at a time")
    func ipv6ByteByByte() throws {
        let address: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]
        var socks = handshake(.address(address), port: 80)
        #expect(try socks.receive([0x05]) == .waitForMore)
        #expect(try socks.receive([0x00]) == .send([0x05, 0x01, 0x00, 0x04] + address + [0, 80]))
        let reply: [UInt8] = [0x05, 0x00, 0x00, 0x04] + address + [0, 80]
        for byte in reply.dropLast() { #expect(try socks.receive([byte]) == .waitForMore) }
        #expect(try socks.receive([reply.last!]) == .tunnelOpen(leftover: []))
    }

    @Test("refusals are proxyRejected in words", arguments: [
        (UInt8(0x05), "connection refused"), (0x02, "connection not allowed by ruleset"), (0x04, "host unreachable"), (0x09, "reply 9"),
    ])
    func connectRefused(reply: UInt8, words: String) throws {
        var socks = handshake()
        _ = try socks.receive([0x05, 0x00])
        #expect {
            try socks.receive([0x05, reply, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        } throws: { error in
            guard let error = reported(error), error.code == .proxyRejected else { return false }
            return error.reason?.contains("could not connect to 127.0.0.1:9001: \(words)") ?? false
        }
    }

    @Test("no acceptable method, bad credentials, and a peer that is not SOCKS5")
    func otherFailures() throws {
        var noMethod = handshake()
        #expect { try noMethod.receive([0x05, 0xFF]) } throws: { (reported($0))?.code == .proxyRejected }
        var badCredentials = handshake(credentials: ("a", "b"))
        _ = try badCredentials.receive([0x05, 0x02])
        #expect { try badCredentials.receive([0x01, 0x01]) } throws: {
            (reported($0))?.reason?.contains("refused the user name and password") == true
        }
        var http = handshake()
        #expect { try http.receive(Array("HTTP/1.1 400 Bad Request\r\n".utf8)) } throws: {
            (reported($0))?.code == .connectionFailed
        }
        var unoffered = handshake()
        #expect { try unoffered.receive([0x05, 0x02]) } throws: { (reported($0))?.code == .connectionFailed }
    }
}

@Suite("Proxies from the environment (curl's rules)")
struct ProxyEnvironmentTests {
    private func proxy(_ variables: [String: String], _ url: String) throws -> String? {
        ProxyEnvironment(variables: variables).proxy(for: try WebSocketURL(parsing: url))
    }

    @Test("wss uses https_proxy, ws uses http_proxy, both fall back to all_proxy; lower case first")
    func selection() throws {
        let all = ["https_proxy": "http://s:1", "HTTPS_PROXY": "http://S:1", "http_proxy": "http://p:1", "all_proxy": "socks5://a:1"]
        #expect(try proxy(all, "wss://h/") == "http://s:1")
        #expect(try proxy(all, "ws://h/") == "http://p:1")
        #expect(try proxy(["HTTPS_PROXY": "http://S:1"], "wss://h/") == "http://S:1")
        // Like curl, upper-case HTTP_PROXY is not read (CGI lets clients set it).
        #expect(try proxy(["HTTP_PROXY": "http://P:1"], "ws://h/") == nil)
        #expect(try proxy(["ALL_PROXY": "socks5h://a:1"], "ws://h/") == "socks5h://a:1")
        #expect(try proxy(["https_proxy": " ", "all_proxy": "http://a:1"], "wss://h/") == "http://a:1")
        #expect(try proxy([:], "wss://h/") == nil)
        #expect(try proxy(all, "ws+unix:///tmp/s.sock") == nil)
    }

    @Test("no_proxy: *, names and their subdomains, IP literals, ports ignored")
    func exceptions() throws {
        let base = ["http_proxy": "http://p:1"]
        func bypassed(_ noProxy: String, _ url: String) throws -> Bool {
            try proxy(base.merging(["no_proxy": noProxy]) { $1 }, url) == nil
        }
        #expect(try bypassed("*", "ws://anything/"))
        #expect(try bypassed("example.org", "ws://example.org/"))
        #expect(try bypassed("example.org", "ws://api.Example.org/"))
        #expect(try bypassed(".example.org", "ws://api.example.org/"))
        #expect(try !bypassed("example.org", "ws://badexample.org/"))
        #expect(try bypassed("localhost, 127.0.0.1", "ws://127.0.0.1:9001/"))
        #expect(try bypassed("127.0.0.1:9001", "ws://127.0.0.1/"))
        #expect(try bypassed("[::1]", "ws://[::1]:9001/"))
        #expect(try bypassed("::1", "ws://[::1]:9001/"))
        #expect(try !bypassed("10.0.0.1", "ws://10.0.0.10/"))
        #expect(try proxy(base.merging(["NO_PROXY": "h"]) { $1 }, "ws://h/") == nil)
    }

    @Test("proxy URLs: kinds, credentials, and what is refused")
    func addresses() throws {
        let socks = try ProxyAddress(parsing: "socks5h://ann:p%40ss@proxy:1080")
        #expect(socks.kind == .socks5(resolvesNames: true))
        #expect(socks.credentials?.user == "ann")
        #expect(socks.credentials?.password == "p@ss")
        #expect(try ProxyAddress(parsing: "socks5://[::1]:1080").kind == .socks5(resolvesNames: false))
        #expect(try ProxyAddress(parsing: "proxy:3128").kind == .httpConnect)
        #expect { try ProxyAddress(parsing: "https://proxy:443") } throws: {
            (reported($0))?.reason?.contains("not supported") == true
        }
        #expect { try ProxyAddress(parsing: "socks4://proxy:1080") } throws: { (reported($0))?.code == .invalidConfiguration }
        #expect(ProxyAddress.redactingCredentials("socks5://ann:secret@p:1/") == "socks5://ann:<redacted>@p:1/")
        #expect(WebSocketProxy("http://u:pw@p:1").description == "http://u:<redacted>@p:1")
        #expect(WebSocketProxy.environment.url == nil)
    }
}
