import Foundation
import Testing
@testable import wsdump
import WebSocketStreams
import WebSocketTestServer

@Suite("wsdump --header-command and --sensitive-header")
struct HeaderCommandTests {
    @Test func optionsReachTheSession() throws {
        let options = try WSDump.sessionOptions(from: [
            "ws://h/", "--header-command", "echo 'X-Token: a'", "--sensitive-header", "X-Tenant", "--sensitive-header", "x-other",
        ])
        #expect(options.headerCommand?.command == "echo 'X-Token: a'")
        #expect(options.configuration.sensitiveHeaders.isSuperset(of: ["Authorization", "Proxy-Authorization", "Cookie"]))
        #expect(options.configuration.sensitiveHeaders.isSuperset(of: ["X-Tenant", "x-other"]))
        #expect(throws: (any Error).self) { try WSDump.sessionOptions(from: ["ws://h/", "--sensitive-header", "Bad: name"]) }
    }

    @Test func outputIsReadAsHeaders() throws {
        let headers = try HeaderCommand.parse("X-Token: abc\n\n  Authorization: Bearer a:b  \r\n")
        #expect(headers.map(\.name) == ["X-Token", "Authorization"])
        #expect(headers.map(\.value) == ["abc", "Bearer a:b"])
        #expect(throws: HeaderCommand.Failure.self) { try HeaderCommand.parse("not a header\n") }
    }

    @Test func headersTheCommandPrintsAreSent() async throws {
        try await withTestServer(recordTexts: true) { server in
            let run = try await WSDumpProcess.run(
                ["--header-command", "echo 'X-Token: from-command'; echo 'X-Api-Key: k-123'", "-t", "hello", "--count", "1",
                 server.url(path: "/echo?custom=x-token")],
                stdin: .open)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "hello\n")
            let seen = try #require(server.snapshot.connections.first?.headers)
            #expect(seen["x-token"] == "from-command")
            #expect(seen["x-api-key"] == "k-123")
        }
    }

    @Test func everyReconnectAttemptRunsTheCommandAgainAndAFailureEndsWsdumpWithItsStatus() async throws {
        try await withTestServer { server in
            let counter = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-counter-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: counter) }
            // Attempts 1 and 2 get a token each; the third finds the token service down.
            let command = """
                n=$(cat '\(counter)' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '\(counter)'
                if [ $n -ge 3 ]; then echo "token service down ($n)" >&2; exit 7; fi
                echo "X-Token: token-$n"
                """
            let run = try await WSDumpProcess.run(
                ["--reconnect", "--header-command", command, server.url(path: "/drop?after=100&custom=x-token")],
                stdin: .open, timeout: .seconds(20))
            #expect(run.status == 7)
            #expect(run.stderr.contains("token service down (3)"), "\(run.stderr)")
            #expect(server.snapshot.connections.map { $0.headers["x-token"] } == ["token-1", "token-2"])
        }
    }

    @Test func aFailingCommandBeforeTheFirstConnectEndsWsdumpWithItsStatusAndStderr() async throws {
        try await withTestServer { server in
            let run = try await WSDumpProcess.run(
                ["--header-command", "echo 'no credentials for you' >&2; exit 9", server.url(path: "/echo")], stdin: .open)
            #expect(run.status == 9)
            #expect(run.stderr.contains("no credentials for you"))
            #expect(server.snapshot.handshakeCount == 0)
        }
    }

    @Test func sensitiveHeaderValuesAreHiddenInVerboseOutput() async throws {
        try await withTestServer { server in
            let arguments = ["-vv", "-H", "X-Tenant: tenant-value-42", "-t", "hi", "--count", "1", server.url(path: "/echo")]
            let plain = try await WSDumpProcess.run(arguments, stdin: .open)
            #expect(plain.status == 0)
            #expect((plain.stdout + plain.stderr).contains("tenant-value-42"))
            let hidden = try await WSDumpProcess.run(["--sensitive-header", "x-tenant"] + arguments, stdin: .open)
            #expect(hidden.status == 0)
            #expect(!(hidden.stdout + hidden.stderr).contains("tenant-value-42"))
            #expect((hidden.stdout + hidden.stderr).contains("X-Tenant: <redacted>"))
        }
    }
}
