import FoundationEssentials
import Glibc
import Testing
import WebSocketStreams
import WebSocketTestServer

/// `ws+unix:` and `wss+unix:` against the TestServer listening on a Unix domain socket.
@Suite("Unix domain sockets")
struct UnixSocketTests {
    /// A socket path of its own in the temporary directory (sun_path holds 107 bytes).
    private static func socketPath() -> String {
        "/tmp/wss-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    }

    @Test("ws+unix: echoes, with the request path and Host: localhost reaching the server")
    func echoOverUnixSocket() async throws {
        try await TestServer.withServer(unixSocketPath: Self.socketPath()) { server in
            let url = try #require(server.unixSocketURL(path: "/echo?room=7"))
            #expect(url.hasPrefix("ws+unix:///tmp/"))
            let connection = try await WebSocket.connect(to: url)
            try await connection.send(.text("over a unix socket"))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .text("over a unix socket"))
            await connection.close()
            let snapshot = try await server.waitUntil { $0.connections.count == 1 }
            let record = try #require(snapshot.connections.first)
            #expect(record.path == "/echo")
            #expect(record.query == ["room": "7"])
            #expect(record.headers["host"] == "localhost")
        }
    }

    @Test("wss+unix: runs TLS over the Unix socket, verifying the certificate as localhost")
    func tlsOverUnixSocket() async throws {
        try await TestServer.withServer(tls: .init(), unixSocketPath: Self.socketPath()) { server in
            var configuration = WebSocketConfiguration()
            configuration.tls.trustedCAFile = server.caCertificateFile
            let url = try #require(server.unixSocketURL(path: "/echo"))
            #expect(url.hasPrefix("wss+unix://"))
            let connection = try await WebSocket.connect(to: url, configuration: configuration)
            try await connection.send(.binary(Data([1, 2, 3])))
            var iterator = connection.messages.makeAsyncIterator()
            #expect(await iterator.next() == .binary(Data([1, 2, 3])))
            await connection.close()
        }
    }

    @Test("a missing socket file fails at once, naming the path")
    func missingSocketFile() async throws {
        let path = Self.socketPath()
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: "ws+unix://\(path):/echo") }
        let failure = try #require(reason(of: error, ifCode: .connectionFailed))
        #expect(failure.contains(path))
        #expect(failure.contains("does not exist"))
    }

    @Test("a socket file nobody listens on is refused")
    func socketWithoutListener() async throws {
        let path = Self.socketPath()
        // Bind a socket file, then close it without listening: connecting is refused.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(descriptor)
        defer { unlink(path) }
        try #require(bound == 0)
        let error = await expectWebSocketError { _ = try await WebSocket.connect(to: "ws+unix://\(path)") }
        let failure = try #require(reason(of: error, ifCode: .connectionFailed))
        #expect(failure.contains("connection refused"), "\(failure)")
    }
}
