import Foundation
import Testing
import WebSocketStreams
import WebSocketTestServer

/// wsdump at a (pseudo-)terminal, as a person would use it.
@Suite("Interactive sessions")
struct InteractiveSessionTests {
    /// Whether `text` holds an SGR (color) escape sequence: `ESC [` digits and semicolons, then `m`.
    private static func containsColorCode(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        for start in bytes.indices where bytes[start] == 0x1B && start + 1 < bytes.count && bytes[start + 1] == UInt8(ascii: "[") {
            var end = start + 2
            while end < bytes.count, bytes[end] == UInt8(ascii: ";") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) {
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "m") { return true }
        }
        return false
    }

    /// At a terminal, the wait for the handshake says what it waits for; Ctrl-C during it
    /// exits with its own status (5), not as a normal close.
    @Test func connectingShowsAndInterruptingItExitsFive() async throws {
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let url = server.url(path: "/hang")
            let run = try WSDumpProcess([url], stdin: .terminal(terminal), environment: ["TERM": "xterm-256color"])
            await run.waitFor("connecting to \(url) ...")
            run.send(signal: SIGINT)
            let result = await run.finish()
            #expect(result.status == 5)
            #expect((result.stdout + result.stderr).contains("interrupted while connecting"))
        }
    }

    @Test func promptEchoColorsAndControlC() async throws {
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let run = try WSDumpProcess(
                [server.url(path: "/echo")], stdin: .terminal(terminal), environment: ["TERM": "xterm-256color"])
            await run.waitFor("Ctrl-C quits")
            await run.waitFor("> ")
            terminal.type("helo\u{1B}[Dl\r")  // a typo fixed with the arrow keys
            await run.waitFor("\u{1B}[32m< hello\u{1B}[0m")
            #expect(run.stdout.contains("\r\u{1B}[2K"))  // the prompt is cleared before the message...
            terminal.type("/ping\r")
            await run.waitFor("pong: ")
            terminal.type("/ping are you there\r")
            await run.waitFor("(payload \"are you there\")")
            terminal.type("\u{3}")
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stdout.contains("closed: 1001 (going away)"))
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    @Test func noColorLeavesOutColorCodes() async throws {
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let run = try WSDumpProcess(
                [server.url(path: "/echo")], stdin: .terminal(terminal),
                environment: ["TERM": "xterm-256color", "NO_COLOR": "1"])
            await run.waitFor("Ctrl-C quits")
            terminal.type("hello\r")
            await run.waitFor("< hello")
            terminal.type("/binary 01 02\r")
            await run.waitFor("< binary (2 bytes): 01 02")
            terminal.type("/help\r")
            await run.waitFor("/close [code [reason]]")
            terminal.type("/close 4000 done\r")
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stdout.contains(#"closed: 4000 (private use) "done""#))
            #expect(result.stdout.contains("> hello"))
            #expect(!Self.containsColorCode(result.stdout))
            #expect(result.stdout.contains("\u{1B}[2K"))  // cursor control for the prompt is fine
            try await server.waitUntil { $0.closeCodes == [4000] }
        }
    }

    @Test func controlDClosesNormally() async throws {
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let run = try WSDumpProcess([server.url(path: "/echo")], stdin: .terminal(terminal), environment: ["TERM": "xterm"])
            await run.waitFor("Ctrl-C quits")
            terminal.type("\u{4}")
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stdout.contains("closed: 1000 (normal closure)"))
        }
    }

    @Test func rawModePrintsBareMessages() async throws {
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let run = try WSDumpProcess(
                ["-r", "-t", "hello", "--count", "1", server.url(path: "/echo")], stdin: .terminal(terminal),
                environment: ["TERM": "xterm-256color"])
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stdout.contains("\r\nhello\r\n"))
            #expect(!result.stdout.contains("< hello"))
            #expect(!result.stdout.utf8.contains(0x1B))
        }
    }

    @Test func largeFileUploadDrawsProgress() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wsdump-\(UUID().uuidString).bin").path
        try Data(count: 1 << 20).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withTestServer { server in
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            let run = try WSDumpProcess(
                ["--file", path, "--count", "1", server.url(path: "/echo")], stdin: .terminal(terminal),
                environment: ["TERM": "xterm-256color"])
            let result = await run.finish()
            #expect(result.status == 0)
            #expect(result.stdout.contains("upload ["))
            #expect(result.stdout.contains("< binary (1048576 bytes)"))
        }
    }
}
