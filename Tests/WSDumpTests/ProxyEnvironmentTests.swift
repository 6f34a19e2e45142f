import Foundation
import Testing
import WebSocketTestServer

/// wsdump honours the proxy environment variables by default, as curl does, and
/// `--no-proxy` turns them off; checked against a real tinyproxy.
@Suite("wsdump and the proxy environment", .enabled(if: ProxyProcess.executable(for: .tinyproxy) != nil, "make test installs tinyproxy"))
struct ProxyEnvironmentTests {
    @Test func httpProxyVariableIsHonouredAndNoProxyTurnsItOff() async throws {
        let proxy = try await ProxyProcess(.tinyproxy)
        defer { proxy.stop() }
        try await withTestServer { server in
            let url = server.url(path: "/echo")
            let through = try await WSDumpProcess.run(
                ["--eof-wait", "1", url], stdin: .bytes("via proxy\n"),
                environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)"])
            #expect(through.status == 0)
            #expect(through.stdout == "via proxy\n")
            let connects = proxy.log.components(separatedBy: "CONNECT 127.0.0.1:\(server.port)").count - 1
            #expect(connects == 1, "tinyproxy's log: \(proxy.log)")

            let direct = try await WSDumpProcess.run(
                ["--no-proxy", "--eof-wait", "1", url], stdin: .bytes("direct\n"),
                environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)"])
            #expect(direct.status == 0)
            let excepted = try await WSDumpProcess.run(
                ["--eof-wait", "1", url], stdin: .bytes("excepted\n"),
                environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": "localhost,127.0.0.1"])
            #expect(excepted.status == 0)
            #expect(proxy.log.components(separatedBy: "CONNECT 127.0.0.1:\(server.port)").count - 1 == 1)
            #expect(server.snapshot.connections.count == 3)
        }
    }
}
