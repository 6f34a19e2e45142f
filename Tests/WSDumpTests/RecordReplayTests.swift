import Foundation
import Glibc
import Testing
import WebSocketStreams
import WebSocketTestServer

/// `wsdump --record` writes a conversation; `TestServer --replay` and
/// `TestServer.Handler.replaying` play the server's side of it back.
@Suite("Recorded conversations, replayed")
struct RecordReplayTests {
    /// A feed that answers a subscription with a snapshot, a binary update and a text one;
    /// "bye" makes it close with 4000.
    static let feed = TestServer.Handler { connection in
        for await message in connection.messages {
            switch message {
            case .text("subscribe"):
                try await connection.send(.text("{\"snapshot\":[1,2]}"))
                try await connection.send(.binary(Data([1, 2, 3])))
                try await connection.send(.text("{\"update\":3}"))
            case .text("bye"):
                await connection.close(code: 4000, reason: "see you")
                return
            default:
                try await connection.send(.text("unknown"))
            }
        }
    }

    static func temporaryFile(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).jsonl").path
    }

    /// wsdump subscribing to the feed and saying "bye" once the update has been shown, as a
    /// person would type it.
    static func runFeedClient(_ arguments: [String]) async throws -> WSDumpProcess.Result {
        let run = try WSDumpProcess(arguments, stdin: .open)
        run.write("subscribe\n")
        await run.waitFor("{\"update\":3}")
        run.write("bye\n")
        run.closeInput()
        return await run.finish()
    }

    /// The SDK meets the feed's conversation at `url`: the snapshot, the binary update, the
    /// text update, then the server's 4000 close after "bye".
    static func expectFeedConversation(url: String) async throws {
        let connection = try await WebSocket.connect(to: url)
        var messages = connection.messages.makeAsyncIterator()
        try await connection.send(.text("subscribe"))
        #expect(await messages.next() == .text("{\"snapshot\":[1,2]}"))
        #expect(await messages.next() == .binary(Data([1, 2, 3])))
        #expect(await messages.next() == .text("{\"update\":3}"))
        try await connection.send(.text("bye"))
        #expect(await messages.next() == nil)
        #expect(connection.closeCode == 4000)
        #expect(connection.closeReason == "see you")
    }

    @Test("wsdump --record against a handler, replayed by the library and by TestServer --replay: same messages, order and ending")
    func recordAndReplay() async throws {
        let file = Self.temporaryFile("feed")
        defer { unlink(file) }
        // Typed as a person would: "bye" only once the update has been shown.
        let original = try await TestServer.withServer(handlers: ["/feed": Self.feed]) { server in
            try await Self.runFeedClient(["--record", file, "--eof-wait", "5", server.url(path: "/feed")])
        }
        #expect(original.stdout.contains("{\"update\":3}"), "\(original.stderr)")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 7)
        #expect(lines.first?.contains("\"type\":\"recording\"") == true && lines.first?.contains("\"version\":1") == true)
        #expect(lines.last?.contains("\"code\":4000") == true && lines.last?.contains("\"direction\":\"in\"") == true)

        let recording = try TestServer.Recording(contentsOfFile: file)
        #expect(recording.events.map(\.kind) == [
            .message(.text("subscribe"), from: .client),
            .message(.text("{\"snapshot\":[1,2]}"), from: .server),
            .message(.binary(Data([1, 2, 3])), from: .server),
            .message(.text("{\"update\":3}"), from: .server),
            .message(.text("bye"), from: .client),
            .close(code: 4000, reason: "see you", from: .server),
        ])
        #expect(recording.events.map(\.time) == recording.events.map(\.time).sorted())

        // The library: the SDK meets the same conversation.
        try await TestServer.withServer(handlers: ["/replayed": .replaying(recording)]) { server in
            try await Self.expectFeedConversation(url: server.url(path: "/replayed"))
        }

        // The CLI, for a client in any language: wsdump sees what it saw the first time.
        let portFile = Self.temporaryFile("port")
        defer { unlink(portFile) }
        let server = try WSDumpProcess(["--replay", file, "--port", "0", "--port-file", portFile], executable: "TestServer")
        #expect(await server.waitFor("listening on"))
        let port = try String(contentsOfFile: portFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let replayed = try await Self.runFeedClient(["--eof-wait", "5", "ws://127.0.0.1:\(port)/feed"])
        #expect(replayed.stdout == original.stdout)
        #expect(replayed.status == original.status)
        #expect(replayed.stderr.contains("4000"))
        server.send(signal: SIGTERM)
        _ = await server.finish()
    }

    @Test("a conversation recorded by hand from a python websockets 17.4 server replays to the SDK as it was")
    func replayOfAnotherServer() async throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/python-websockets-feed.jsonl").path
        let recording = try TestServer.Recording(contentsOfFile: fixture)
        #expect(recording.events.count == 6)
        try await TestServer.withServer(handlers: ["/feed": .replaying(recording)]) { server in
            try await Self.expectFeedConversation(url: server.url(path: "/feed"))
        }
    }

    @Test("a client that diverges gets 1008 saying where, and the snapshot says the same")
    func divergence() async throws {
        let recording = try TestServer.Recording(jsonLines: """
            {"type":"recording","version":1,"url":"ws://example/feed","subprotocol":null}
            {"t":1,"direction":"out","type":"text","data":"subscribe"}
            {"t":2,"direction":"in","type":"text","data":"snapshot"}
            {"t":3,"direction":"out","type":"text","data":"ack"}
            {"t":4,"direction":"in","type":"text","data":"update"}
            """)
        try await TestServer.withServer(handlers: ["/feed": .replaying(recording, timing: .immediate)]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/feed"))
            var messages = connection.messages.makeAsyncIterator()
            try await connection.send(.text("subscribe"))
            #expect(await messages.next() == .text("snapshot"))
            try await connection.send(.text("nack"))
            #expect(await messages.next() == nil)
            #expect(connection.closeCode == .policyViolation)
            let expected = #"message 2: expected text "ack", got text "nack""#
            #expect(connection.closeReason == expected)
            let seen = try await server.waitUntil { $0.connections.first?.closeReasonSent != nil }
            #expect(seen.connections[0].closeReasonSent == expected)
            #expect(seen.connections[0].closeCodeSent == .policyViolation)
        }
        // Loose matching: any message stands for the recorded one.
        try await TestServer.withServer(handlers: ["/feed": .replaying(recording, matching: .loose, timing: .immediate)]) { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/feed"))
            var messages = connection.messages.makeAsyncIterator()
            try await connection.send(.text("hello"))
            #expect(await messages.next() == .text("snapshot"))
            try await connection.send(.text("anything"))
            #expect(await messages.next() == .text("update"))
            await connection.close()
            #expect(connection.closeCode == .normalClosure)
        }
    }

    @Test("a recorded drop is replayed as a drop, after the recorded gap")
    func replayedDrop() async throws {
        let recording = try TestServer.Recording(jsonLines: """
            {"type":"recording","version":1}
            {"t":0.5,"direction":"in","type":"text","data":"hello"}
            {"t":150.5,"direction":"event","type":"drop"}
            """)
        try await TestServer.withServer(handlers: ["/flaky": .replaying(recording)]) { server in
            // Measured from before the connection opened, so a late wake-up cannot shorten it.
            let started = ContinuousClock.now
            let connection = try await WebSocket.connect(to: server.url(path: "/flaky"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("hello"))
            #expect(await messages.next() == nil)
            #expect(ContinuousClock.now - started >= .milliseconds(150))
            #expect(connection.closeCode == .abnormalClosure)
        }
    }

    @Test("a recording that is not valid is refused, naming the line", arguments: [
        ("", "empty"),
        ("{\"type\":\"recording\",\"version\":2}", "line 1: schema version 2 is not supported"),
        ("{\"type\":\"recording\",\"version\":1}\nnot json", "line 2 is not a JSON object"),
        ("{\"type\":\"recording\",\"version\":1}\n{\"t\":1,\"direction\":\"in\",\"type\":\"binary\",\"base64\":\"@@@\"}", "line 2: \"base64\""),
        ("{\"type\":\"recording\",\"version\":1}\n\n{\"t\":1,\"direction\":\"in\",\"type\":\"smoke\"}", "line 3: unknown type \"smoke\""),
        ("{\"t\":1,\"direction\":\"in\",\"type\":\"text\",\"data\":\"x\"}", "line 1: the first line must be"),
        ("{\"type\":\"recording\",\"version\":1}\n{\"t\":1,\"direction\":\"in\",\"type\":\"close\",\"code\":1005}", "line 2: close code 1005 never goes in a close frame"),
    ])
    func invalidRecordings(text: String, expected: String) throws {
        do {
            _ = try TestServer.Recording(jsonLines: text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test("a recorded 1006 is the drop it names")
    func abnormalClosureIsADrop() throws {
        let recording = try TestServer.Recording(jsonLines: """
            {"type":"recording","version":1}
            {"t":5,"direction":"in","type":"close","code":1006,"reason":""}
            """)
        #expect(recording.events.map(\.kind) == [.drop])
    }

    @Test("TestServer --replay refuses a bad recording at start, naming the line")
    func cliRefusesBadRecording() async throws {
        let file = Self.temporaryFile("bad")
        defer { unlink(file) }
        try "{\"type\":\"recording\",\"version\":1}\n{\"t\":1,\"direction\":\"in\",\"type\":\"binary\",\"base64\":\"%%\"}\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let run = try await WSDumpProcess.run(["--replay", file, "--port", "0"], executable: "TestServer")
        #expect(run.status != 0)
        #expect(run.stderr.contains("line 2"), "\(run.stderr)")
    }
}
