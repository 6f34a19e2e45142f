import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// wsdump driven through pipes, as a script would use it.
@Suite("Piped sessions")
struct PipedSessionTests {
    @Test func pipedLinesAreSentAndEchoesPrinted() async throws {
        try await withTestServer(recordTexts: true) { server in
            let result = try await WSDumpProcess.run(
                ["--eof-wait", "1", server.url(path: "/echo")], stdin: .bytes("one\ntwo\r\nthree"))
            #expect(result.status == 0)
            #expect(result.stdout == "one\ntwo\nthree\n")
            #expect(result.stderr.contains("connected to \(server.url(path: "/echo"))"))
            #expect(result.stderr.contains("closed: 1000 (normal closure)"))
            #expect(server.snapshot.allTextsReceived == ["one", "two", "three"])
        }
    }

    /// libwebsockets 4.1 aborts on an empty message that follows another on a compressed
    /// connection, so wsdump skips those with a message; without compression they are sent.
    @Test func emptyLinesAreSentWithAndWithoutCompression() async throws {
        try await withTestServer(recordTexts: true) { server in
            let compressed = try await WSDumpProcess.run(
                ["--eof-wait", "1", server.url(path: "/echo")], stdin: .bytes("a\n\nb\n"))
            #expect(compressed.status == 0)
            #expect(compressed.stdout == "a\n\nb\n")
            #expect(server.snapshot.connections.last?.textsReceived == ["a", "", "b"])

            let uncompressed = try await WSDumpProcess.run(
                ["--no-compression", "--eof-wait", "1", server.url(path: "/echo")], stdin: .bytes("a\n\nb\n"))
            #expect(uncompressed.status == 0)
            #expect(uncompressed.stdout == "a\n\nb\n")
            #expect(server.snapshot.connections.last?.textsReceived == ["a", "", "b"])
        }
    }

    @Test func textOnceThenCount() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["-t", "hello", "--count", "1", "--eof-wait", "5", server.url(path: "/echo")])
            #expect(result.status == 0)
            #expect(result.stdout == "hello\n")
            #expect(result.stderr.contains("closed: 1000 (normal closure)"))
        }
    }

    @Test func jsonLinesParseBack() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--jsonl", "-t", "hello", "--count", "1", "--eof-wait", "5", server.url(path: "/echo")])
            #expect(result.status == 0)
            let events = try result.stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let kinds = events.map { "\($0["direction"] ?? "?")/\($0["type"] ?? "?")" }
            #expect(kinds.first == "event/open")
            #expect(kinds.contains("out/text"))
            #expect(kinds.contains("in/text"))
            #expect(kinds.last == "event/close")
            #expect(events.last?["code"] as? Int == 1000)
            let received = events.first { $0["direction"] as? String == "in" && $0["type"] as? String == "text" }
            #expect(received?["data"] as? String == "hello")
            #expect(events.allSatisfy { $0["time"] is Double })
        }
    }

    @Test func hexDumpOfAPushedMessage() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--hex", "--count", "1", "--eof-wait", "5", server.url(path: "/push?count=1&size=20")])
            #expect(result.status == 0)
            #expect(result.stdout == """
                binary (20 bytes):
                00000000  00 00 00 00 00 00 00 00  61 61 61 61 61 61 61 61  |........aaaaaaaa|
                00000010  61 61 61 61                                       |aaaa|

                """)
        }
    }

    @Test func binaryLinesArriveAsBinary() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--binary", "--jsonl", "--count", "1", "--eof-wait", "5", server.url(path: "/echo")], stdin: .bytes("hello\n"))
            #expect(result.status == 0)
            let events = result.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let echo = events.first { $0["direction"] as? String == "in" && $0["type"] as? String != "close" }
            #expect(echo?["type"] as? String == "binary")
            #expect(echo?["base64"] as? String == Data("hello".utf8).base64EncodedString())
        }
    }

    @Test func headersSubprotocolsAndOriginReachTheServer() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run([
                "-H", "X-Test: a, b", "--headers", "X-Client: c1, X-Trace-Id: t1", "-s", "chat", "superchat",
                "-o", "https://origin.test", "-t", "x", "--count", "1", "--eof-wait", "5", server.url(path: "/echo"),
            ])
            #expect(result.status == 0)
            #expect(result.stderr.contains("subprotocol: chat"))
            let connection = try #require(server.snapshot.connections.first)
            #expect(connection.headers["x-test"] == "a, b")
            #expect(connection.headers["x-client"] == "c1")
            #expect(connection.headers["x-trace-id"] == "t1")
            #expect(connection.headers["origin"] == "https://origin.test")
            #expect(connection.headers["sec-websocket-protocol"] == "chat, superchat")
            #expect(connection.subprotocol == "chat")
        }
    }

    @Test func pipedOutputHasNoEscapeCodes() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["-vv", "--timings", "--json", "--eof-wait", "1", server.url(path: "/push?count=2&size=20&type=text")],
                stdin: .bytes("{\"a\":1}\nplain\n"))
            #expect(result.status == 0)
            #expect(result.stdout.contains("text: {"))
            let timed = result.stdout.split(separator: "\n").filter { $0.contains(": text: ") }
            #expect(timed.count == 4)
            #expect(timed.allSatisfy { $0.wholeMatch(of: /\d+\.\d{3}: text: .*/) != nil })
            #expect(result.stderr.contains("closed: 1000"))
            #expect(!result.stdoutBytes.contains(0x1B))
            #expect(!result.stderrBytes.contains(0x1B))
        }
    }

    @Test func fileIsSentAsOneBinaryMessage() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-\(UUID().uuidString).bin").path
        let contents = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })
        try contents.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--file", path, "--count", "1", "--eof-wait", "5", server.url(path: "/echo")])
            #expect(result.status == 0)
            #expect(result.stdout == "binary (300000 bytes): 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f ... (first 16 bytes shown)\n")
            #expect(server.snapshot.connections.first?.bytesReceived == 300_000)
        }
    }

    /// `--send-file` streams a file out as one message; `--stream -r` writes the echo's
    /// bytes as they arrive. 600 kB (ten pieces) through `/frame-echo`, which echoes frame by frame, so
    /// neither side ever holds the whole message.
    @Test func sendFileAndStreamRoundTripAFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-\(UUID().uuidString).bin").path
        let contents = Data((0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try contents.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withTestServer { server in
            let raw = try await WSDumpProcess.run(
                ["--send-file", path, "--stream", "-r", "--count", "1", server.url(path: "/frame-echo")])
            #expect(raw.status == 0)
            #expect(raw.stdoutBytes == contents)

            let summary = try await WSDumpProcess.run(
                ["--send-file", path, "--stream", "--count", "1", server.url(path: "/frame-echo")])
            #expect(summary.status == 0)
            #expect(summary.stdout.hasPrefix("binary (600000 bytes, in "))
        }
    }

    /// `--stream` prints text as its pieces arrive, one line per message.
    @Test func streamPrintsText() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--stream", "--eof-wait", "1", server.url(path: "/echo")], stdin: .bytes("héllo wörld\nsecond\n"))
            #expect(result.status == 0)
            #expect(result.stdout == "héllo wörld\nsecond\n")
        }
    }

    @Test func reconnectPrintsStateChanges() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(
                ["--reconnect", "--timeout", "1.5", server.url(path: "/drop?after=100")], stdin: .open)
            #expect(result.status == 4)
            #expect(result.stderr.contains("connecting (attempt 1)"))
            #expect(result.stderr.contains("reconnecting after "))
            #expect(result.stderr.contains("completed"))
            #expect(!server.snapshot.connections.isEmpty)

            let rejected = try await WSDumpProcess.run(["--reconnect", server.url(path: "/reject?status=401")], stdin: .open)
            #expect(rejected.status == 1)
            #expect(rejected.stderr.contains("error: handshake rejected: HTTP 401"))
        }
    }

    /// Reconnects to the same wss:// server resume the TLS session, and -v says so.
    @Test func reconnectOverTLSSaysTheSessionResumed() async throws {
        try await withTestServer(tls: .init()) { server in
            let run = try WSDumpProcess(
                ["-v", "--reconnect", "--ca-file", server.caCertificateFile ?? "", server.url(path: "/close?code=1012&after=50")],
                stdin: .open)
            await run.waitFor("TLS session resumed", inErrors: true)
            run.send(signal: SIGINT)
            let result = await run.finish()
            #expect(result.stderr.contains("TLS session resumed"))
            #expect(server.snapshot.connections.dropFirst().contains { $0.tlsResumed })
        }
    }

    @Test func keepAlivePingsShowWithTwoV() async throws {
        try await withTestServer { server in
            let run = try WSDumpProcess(["-vv", "--ping-interval", "0.2", server.url(path: "/echo")], stdin: .open)
            await run.waitFor("< pong (", inErrors: true)
            // Input that ends before anything was sent only listens: Ctrl-C ends it.
            run.send(signal: SIGINT)
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stderr.contains("> ping (keep-alive)"))
        }
    }

    @Test func sigintClosesWithGoingAway() async throws {
        try await withTestServer { server in
            let run = try WSDumpProcess([server.url(path: "/echo")], stdin: .open)
            await run.waitFor("connected to", inErrors: true)
            run.send(signal: SIGINT)
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stderr.contains("closed: 1001 (going away)"))
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    /// A server that never answers a close frame (it stopped reading): SIGTERM still ends
    /// wsdump within about a second instead of the 10 s close timeout.
    @Test func sigtermQuitsWithinASecondWhateverThePeerDoes() async throws {
        try await withTestServer { server in
            let run = try WSDumpProcess([server.url(path: "/stall")], stdin: .open)
            await run.waitFor("connected to", inErrors: true)
            let started = ContinuousClock.now
            run.send(signal: SIGTERM)
            let result = await run.finish(timeout: .seconds(5))
            #expect(result.exitedAt.map { $0 - started } ?? .seconds(60) < .seconds(3))
            #expect(result.stderr.contains("did not finish within 1"), "stderr: \(result.stderr)")
        }
    }

    /// Input that ends before the replies come (a server that answers after 200 ms and drops
    /// what a close overtakes): --wait-replies keeps the connection until they have, and
    /// --require-reply turns "nothing arrived" into status 6.
    @Test func waitRepliesAndRequireReply() async throws {
        try await withTestServer { server in
            let slowServer = server.url(path: "/echo?delay=200")
            let early = try await WSDumpProcess.run(["-r", "--require-reply", slowServer], stdin: .bytes("one\ntwo\n"))
            #expect(early.status == 6, "the close overtook the replies: stdout \(early.stdout)")
            let waited = try await WSDumpProcess.run(
                ["-r", "--wait-replies", "2", "--require-reply", slowServer], stdin: .bytes("one\ntwo\n"))
            #expect(waited.status == 0, "stderr: \(waited.stderr)")
            #expect(waited.stdout == "one\ntwo\n")

            // Nothing sent and nothing received: wsdump listens until the server closes.
            let silent = try await WSDumpProcess.run(["--require-reply", server.url(path: "/close?code=1000&after=50")])
            #expect(silent.status == 6)
            #expect(silent.stderr.contains("no message was received (--require-reply)"))

            // The wait is bounded: by --eof-wait when given.
            let started = ContinuousClock.now
            let bounded = try await WSDumpProcess.run(["--wait-replies", "1", "--eof-wait", "0.3", server.url(path: "/echo")])
            #expect(bounded.status == 0)
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    /// A server that closes while it is still echoing (its last echoes and its close arrive
    /// in one read): --jsonl lists those echoes before the close, in wire order, with times
    /// that do not go back.
    @Test func jsonLinesKeepWireOrderAtTheClose() async throws {
        try await withTestServer { server in
            for _ in 0..<5 {
                let lines = String(repeating: "line\n", count: 3000)
                let result = try await WSDumpProcess.run(
                    ["--jsonl", "--eof-wait", "5", server.url(path: "/close?code=1000&after=20")], stdin: .bytes(lines))
                let events = try result.stdout.split(separator: "\n").map { line in
                    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                }
                let kinds = events.map { "\($0["direction"] ?? "?")/\($0["type"] ?? "?")" }
                let times = events.compactMap { $0["time"] as? Double }
                #expect(times == times.sorted(), "\(kinds)")
                if let close = kinds.firstIndex(of: "in/close"), let lastText = kinds.lastIndex(of: "in/text") {
                    #expect(lastText < close, "\(kinds)")
                }
            }
        }
    }

    /// A small message streamed arrives as one piece, and says so in the singular.
    @Test func oneStreamedPieceIsSingular() async throws {
        try await withTestServer { server in
            let result = try await WSDumpProcess.run(["--stream", "--count", "1", server.url(path: "/push?count=1&size=10")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "binary (10 bytes, in 1 piece)\n", "\(result.stdout)")
        }
    }
}
