import FoundationEssentials
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Connections through real proxies from the system's packages: tinyproxy (HTTP CONNECT)
/// and microsocks (SOCKS5), each started on a free loopback port by the test.
@Suite("Real proxies", .enabled(if: ProxyProcess.executable(for: .tinyproxy) != nil
    && ProxyProcess.executable(for: .microsocks(credentials: nil)) != nil, "make test installs tinyproxy and microsocks"))
struct ProxyTests {
    /// A loopback port a server listened on a moment ago and no longer does.
    private func closedPort() async throws -> Int {
        let server = try await TestServer.start()
        await server.stop()
        return server.port
    }

    private func echo(_ url: String, through proxy: WebSocketProxy, caFile: String? = nil) async throws -> WebSocketMessage? {
        var configuration = WebSocketConfiguration()
        configuration.proxy = proxy
        configuration.tls.trustedCAFile = caFile
        let connection = try await WebSocket.connect(to: url, configuration: configuration)
        try await connection.send(.text("through the proxy"))
        var iterator = connection.messages.makeAsyncIterator()
        let reply = await iterator.next()
        await connection.close()
        return reply
    }

    @Test("ws:// and wss:// through tinyproxy's CONNECT tunnel")
    func throughTinyproxy() async throws {
        let proxy = try await ProxyProcess(.tinyproxy)
        defer { proxy.stop() }
        try await TestServer.withServer { server in
            let reply = try await echo(server.url(path: "/echo"), through: "http://127.0.0.1:\(proxy.port)")
            #expect(reply == .text("through the proxy"))
        }
        try await TestServer.withServer(tls: .init()) { server in
            let url = server.url(path: "/echo")
            let reply = try await echo(url, through: "http://127.0.0.1:\(proxy.port)", caFile: server.caCertificateFile)
            #expect(reply == .text("through the proxy"))
        }
        #expect(proxy.log.contains("CONNECT 127.0.0.1:"), "tinyproxy saw no CONNECT: \(proxy.log)")
    }

    @Test("tinyproxy's refusal to reach a closed port is proxyRejected with its HTTP status")
    func tinyproxyRefusal() async throws {
        let proxy = try await ProxyProcess(.tinyproxy)
        defer { proxy.stop() }
        let url = "ws://127.0.0.1:\(try await closedPort())/echo"
        var configuration = WebSocketConfiguration()
        configuration.proxy = "http://127.0.0.1:\(proxy.port)"
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: url, configuration: configuration) }
        let rejection = try #require(matching(error, .proxyRejected))
        #expect(rejection.httpStatus.map { $0 >= 400 } == true)
    }

    @Test("ws:// and wss:// through microsocks with a user name and password (socks5://)")
    func throughMicrosocks() async throws {
        let proxy = try await ProxyProcess(.microsocks(credentials: ("ann", "s3cret")))
        defer { proxy.stop() }
        try await TestServer.withServer { server in
            let reply = try await echo(server.url(path: "/echo"), through: "socks5://ann:s3cret@127.0.0.1:\(proxy.port)")
            #expect(reply == .text("through the proxy"))
            #expect(server.snapshot.connections.count == 1)
        }
        try await TestServer.withServer(tls: .init()) { server in
            let url = server.url(path: "/echo")
            let reply = try await echo(url, through: "socks5://ann:s3cret@127.0.0.1:\(proxy.port)", caFile: server.caCertificateFile)
            #expect(reply == .text("through the proxy"))
        }
    }

    @Test("microsocks refusing credentials, or their absence, is proxyRejected saying which")
    func microsocksRefusals() async throws {
        let proxy = try await ProxyProcess(.microsocks(credentials: ("ann", "s3cret")))
        defer { proxy.stop() }
        try await TestServer.withServer { server in
            var configuration = WebSocketConfiguration()
            configuration.proxy = "socks5://ann:wrong@127.0.0.1:\(proxy.port)"
            let wrong = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            #expect(reason(of: wrong, ifCode: .proxyRejected)?.contains("refused the user name and password") == true)

            configuration.proxy = "socks5://127.0.0.1:\(proxy.port)"
            let missing = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            #expect(reason(of: missing, ifCode: .proxyRejected)?.contains("user name and password") == true)
            #expect(server.snapshot.connections.isEmpty)
        }
    }

    @Test("socks5h:// hands the host name to the proxy; a closed port reads as the proxy's 'connection refused'")
    func socks5hAndRefusal() async throws {
        let proxy = try await ProxyProcess(.microsocks(credentials: nil))
        defer { proxy.stop() }
        try await TestServer.withServer { server in
            // microsocks resolves "localhost" itself; the server listens on 127.0.0.1.
            var configuration = WebSocketConfiguration()
            configuration.proxy = "socks5h://127.0.0.1:\(proxy.port)"
            configuration.connectTimeout = .seconds(5)
            let connection = try await WebSocket.connect(to: "ws://localhost:\(server.port)/echo", configuration: configuration)
            try await connection.send(.text("by name"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("by name"))
            await connection.close()
            #expect(server.snapshot.connections.first?.headers["host"] == "localhost:\(server.port)")
        }
        let url = "ws://127.0.0.1:\(try await closedPort())/echo"
        var configuration = WebSocketConfiguration()
        configuration.proxy = "socks5://127.0.0.1:\(proxy.port)"
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: url, configuration: configuration) }
        let refusal = try #require(reason(of: error, ifCode: .proxyRejected))
        #expect(refusal.contains("could not connect to 127.0.0.1:"), "\(refusal)")
    }

    @Test("a proxy that is not listening fails as connectionFailed naming the proxy")
    func proxyDown() async throws {
        let port = try await closedPort()
        try await TestServer.withServer { server in
            var configuration = WebSocketConfiguration()
            configuration.proxy = "socks5://127.0.0.1:\(port)"
            let error = await expectWebSocketError {
                _ = try await WebSocket.connect(to: server.url(path: "/echo"), configuration: configuration)
            }
            let failure = try #require(reason(of: error, ifCode: .connectionFailed))
            #expect(failure.contains("could not reach the proxy: connection refused"), "\(failure)")
            #expect(failure.contains("SOCKS5 proxy 127.0.0.1:\(port)"), "\(failure)")
        }
    }
}
