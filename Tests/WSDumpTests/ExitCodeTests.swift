import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Every exit code, with the error messages that go with them.
@Suite("Exit codes and errors")
struct ExitCodeTests {
    @Test func refusedPortExitsOne() async throws {
        let server = try await TestServer.start()
        let url = server.url(path: "/echo")
        await server.stop()
        let result = try await WSDumpProcess.run([url])
        #expect(result.status == 1)
        #expect(result.stderr.contains("error: connection failed:"))
        #expect(result.stdout.isEmpty)
    }

    @Test func badURLExitsTwo() async throws {
        let result = try await WSDumpProcess.run(["http://x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("invalid URL: 'http://x': the scheme must be ws, wss, ws+unix or wss+unix"))
    }

    @Test func unknownFlagExitsTwo() async throws {
        let result = try await WSDumpProcess.run(["--bogus", "ws://127.0.0.1:9/"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("Unknown option '--bogus'"))
    }

    @Test func helpExitsZeroAndDocumentsExitCodes() async throws {
        let result = try await WSDumpProcess.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("EXIT CODES:"))
        #expect(result.stdout.contains("4  --timeout expired"))
    }

    @Test func peerErrorCloseExitsThree() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--eof-wait", "5", server.url(path: "/close?code=4001&reason=nope")])
            #expect(result.status == 3)
            #expect(result.stderr.contains(#"closed: 4001 (private use) "nope""#))
        }
    }

    @Test func droppedConnectionExitsThree() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(["--eof-wait", "5", server.url(path: "/drop?after=100")])
            #expect(result.status == 3)
            #expect(result.stderr.contains("closed: 1006 (abnormal closure)"))
        }
    }

    @Test func timeoutExitsFourAfterClosingNormally() async throws {
        try await withTestServer { server in
            // Generous: the limit covers connecting too, which is slow on a busy machine.
            let run = try WSDumpProcess(["--timeout", "2", server.url(path: "/echo")], stdin: .open)
            await run.waitFor("connected to", inErrors: true)
            let result = await run.finish()
            run.closeInput()
            #expect(result.status == 4)
            #expect(result.stderr.contains("timeout: 2.000 seconds passed; closing"))
            #expect(result.stderr.contains("closed: 1000 (normal closure)"))
            try await server.waitUntil { $0.closeCodes == [.normalClosure] }
        }
    }

    @Test func timeoutWhileConnectingExitsFour() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(["--timeout", "0.3", server.url(path: "/hang")], stdin: .open)
            #expect(result.status == 4)
            #expect(result.stderr.contains("timeout: 0.300 seconds passed while connecting"))
        }
    }

    @Test func unauthorizedShowsStatusAndChallenge() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run([server.url(path: "/reject?status=401")])
            #expect(result.status == 1)
            #expect(result.stderr.contains("error: handshake rejected: HTTP 401"))
            #expect(result.stderr.contains("WWW-Authenticate"))
        }
    }

    @Test func untrustedCertificateFailsUnlessTrusted() async throws {
        try await withTestServer(tls: .init()) { server in
            let url = server.url(path: "/echo")
            let untrusted = try await WSDumpProcess.run([url])
            #expect(untrusted.status == 1)
            #expect(untrusted.stderr.contains("error: TLS failure:"))
            // What to do about it, in wsdump's own flag.
            #expect(untrusted.stderr.contains("--ca-file"), "\(untrusted.stderr)")

            let caFile = try #require(server.caCertificateFile)
            let trusted = try await WSDumpProcess.run(["--ca-file", caFile, "-t", "hi", "--count", "1", "--eof-wait", "5", url])
            #expect(trusted.status == 0)
            #expect(trusted.stdout == "hi\n")

            let ignored = try await WSDumpProcess.run(["-n", "-t", "hi", "--count", "1", "--eof-wait", "5", url])
            #expect(ignored.status == 0)
        }
    }

    /// -vv on a refused handshake: the request line with its path, the status line, and the
    /// first lines of the body the server sent with it.
    @Test func refusedHandshakeWithTwoVShowsStatusPathAndBody() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(["-vv", server.url(path: "/no-such-route")])
            #expect(result.status == 1)
            #expect(result.stderr.contains("GET /no-such-route HTTP/1.1"))
            #expect(result.stderr.contains("HTTP/1.1 404"))
            #expect(result.stderr.contains("--- response body ("))
            #expect(result.stderr.contains("error: no WebSocket endpoint at /no-such-route"))
        }
    }
}

