import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// Listen-only use: `wsdump URL </dev/null` and `--listen` print everything the server
/// pushes, every run, instead of racing their own close against it.
@Suite("Listening without input")
struct ListenTests {
    /// Standard input at its end before anything was sent: wsdump does not close, so both
    /// 5 MB messages arrive whole, run after run.
    @Test func inputAtEndStillPrintsEveryPushedMessage() async throws {
        try await withTestServer { server in
            for run in 1...5 {
                let result = try await WSDumpProcess.run(
                    ["--count", "2", server.url(path: "/push?count=2&size=5000000")], stdin: .empty)
                #expect(result.status == 0, "run \(run): \(result.stderr)")
                let lines = result.stdout.split(separator: "\n")
                #expect(lines.count == 2, "run \(run): \(result.stdout.prefix(300))")
                #expect(lines.allSatisfy { $0.hasPrefix("binary (5000000 bytes)") }, "run \(run)")
            }
        }
    }

    /// With nothing to count, listening lasts until the server closes.
    @Test func inputAtEndListensUntilTheServerCloses() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["-v", server.url(path: "/close?code=1000&reason=done&after=300")], stdin: .empty)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("listening until the server closes"))
            #expect(result.stderr.contains("done"), "the server's close, not ours: \(result.stderr)")
        }
    }

    /// `--listen` never reads input: a pipe left open does not matter, `-t` is still sent.
    @Test func listenFlagIgnoresInputAndSendsText() async throws {
        try await withTestServer(recordTexts: true) { server in
            let process = try WSDumpProcess(
                ["--listen", "-t", "hello", "--count", "3", server.url(path: "/push?count=2&size=10&type=text")], stdin: .open)
            process.write("not sent\n")
            let result = await process.finish()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.split(separator: "\n").count == 3)
            #expect(result.stdout.contains("hello"))
            #expect(server.snapshot.allTextsReceived == ["hello"])
        }
    }

    /// Input that did send something still closes at its end, as before.
    @Test func inputThatSentALineStillClosesAtItsEnd() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(["--eof-wait", "0.5", server.url(path: "/echo")], stdin: .bytes("one\n"))
            #expect(result.status == 0)
            #expect(result.stdout == "one\n")
            #expect(result.stderr.contains("closed: 1000"))
        }
    }

    /// `--max-message-size` sets the limit; a message over it names the flags that help.
    @Test func maxMessageSizeAndItsAdvice() async throws {
        try await withTestServer { server in
            let url = server.url(path: "/push?count=1&size=2000")
            let tooLarge = try await WSDumpProcess.run(["--max-message-size", "1000", "--count", "1", url])
            #expect(tooLarge.status != 0)
            #expect(tooLarge.stderr.contains("1009"), "\(tooLarge.stderr)")
            #expect(tooLarge.stderr.contains("--max-message-size"), "\(tooLarge.stderr)")
            #expect(tooLarge.stderr.contains("--stream"), "\(tooLarge.stderr)")

            let fits = try await WSDumpProcess.run(["--max-message-size", "3000", "--count", "1", url])
            #expect(fits.status == 0, "\(fits.stderr)")
            #expect(fits.stdout.hasPrefix("binary (2000 bytes)"))
        }
    }
}
