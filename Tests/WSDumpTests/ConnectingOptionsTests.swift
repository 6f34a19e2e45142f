import Testing
@testable import wsdump
import WebSocketStreams
import WebSocketTestServer

@Suite("wsdump's connecting options: --resolve, --connect-to, --max-redirects, --local-address, -v timings")
struct ConnectingOptionsTests {
    @Test func optionsReachTheConfiguration() throws {
        let options = try WSDump.sessionOptions(from: [
            "ws://api.test:8080/", "--resolve", "api.test:8080:127.0.0.1,[::1]", "--max-redirects", "2",
            "--local-address", "127.0.0.9",
        ])
        #expect(options.configuration.maxRedirects == 2)
        #expect(options.configuration.localAddress == "127.0.0.9")
        #expect(options.configuration.resolver != nil)
        let defaults = try WSDump.sessionOptions(from: ["ws://h/"])
        #expect(defaults.configuration.resolver == nil)
        #expect(defaults.configuration.maxRedirects == 5)
    }

    @Test(arguments: [
        ["ws://h/", "--resolve", "h:80"], ["ws://h/", "--resolve", "h:81:127.0.0.1"], ["ws://h/", "--resolve", "h:80:localhost"],
        ["ws://h/", "--connect-to", "example.org"], ["ws://h/", "--max-redirects", "-1"], ["ws://h/", "--local-address", "eth0"],
    ])
    func invalidValuesAreRejected(arguments: [String]) {
        #expect(throws: (any Error).self) { try WSDump.sessionOptions(from: arguments) }
    }

    @Test func resolveAndConnectToReachTheServerUnderAnotherName() async throws {
        try await withTestServer(recordTexts: true) { server in
            let named = "ws://feed.test:\(server.port)/echo"
            let resolved = try await WSDumpProcess.run(
                ["--resolve", "feed.test:\(server.port):127.0.0.2,127.0.0.1", "-t", "hello", "--count", "1", named], stdin: .open)
            #expect(resolved.status == 0)
            #expect(resolved.stdout == "hello\n")
            let connected = try await WSDumpProcess.run(
                ["--connect-to", "127.0.0.1", "--local-address", "127.0.0.9", "-t", "again", "--count", "1", named], stdin: .open)
            #expect(connected.status == 0)
            let seen = server.snapshot.connections
            #expect(seen.map { $0.headers["host"] } == ["feed.test:\(server.port)", "feed.test:\(server.port)"])
            #expect(seen.last?.peerAddress == "127.0.0.9")
        }
    }

    @Test func verboseShowsEachRedirectAndThePhaseTimings() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["-v", "-t", "x", "--count", "1", server.url(path: "/redirect?hops=2&to=/echo")], stdin: .open)
            #expect(result.status == 0)
            #expect(result.stderr.contains("redirected (302) to /redirect?to=%2Fecho&hops=1"))
            #expect(result.stderr.contains("redirected (302) to /echo"))
            #expect(result.stderr.contains("connected to \(server.url(path: "/echo"))"))
            #expect(result.stderr.contains("timings: tcp "))
            #expect(result.stderr.contains("2 redirects"))

            let refused = try await WSDumpProcess.run(["--max-redirects", "0", server.url(path: "/redirect?to=/echo")], stdin: .open)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("302"))
        }
    }
}
