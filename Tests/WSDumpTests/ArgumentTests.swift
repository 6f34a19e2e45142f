import Testing
import WebSocketStreams
@testable import wsdump

@Suite("Arguments")
struct ArgumentTests {
    @Test func pythonVerboseLevelsBecomeRepeatedFlags() {
        #expect(ArgumentPreprocessing.rewrite(["-v", "2", "ws://h/"]) == ["-v", "-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["--verbose", "3", "ws://h/"]) == ["-v", "-v", "-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["--verbose=2", "ws://h/"]) == ["-v", "-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["-v", "0", "ws://h/"]) == ["ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["-v", "ws://h/"]) == ["-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["-vv", "ws://h/"]) == ["-vv", "ws://h/"])
    }

    @Test func valuesOfOtherOptionsAreLeftAlone() {
        #expect(ArgumentPreprocessing.rewrite(["-t", "-v", "ws://h/"]) == ["-t", "-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["--count", "2", "-v", "1", "ws://h/"]) == ["--count", "2", "-v", "ws://h/"])
        #expect(ArgumentPreprocessing.rewrite(["ws://h/", "--", "-v", "2"]) == ["ws://h/", "--", "-v", "2"])
    }

    @Test func aURLAfterSubprotocolsIsMovedToTheFront() {
        #expect(ArgumentPreprocessing.rewrite(["-s", "chat", "superchat", "ws://h/", "-v"])
            == ["ws://h/", "-s", "chat", "superchat", "-v"])
        #expect(ArgumentPreprocessing.rewrite(["ws://h/", "-s", "chat"]) == ["ws://h/", "-s", "chat"])
    }

    @Test func pythonCommandLineParses() throws {
        let options = try WSDump.sessionOptions(from: [
            "-v", "2", "-n", "-r", "-p", "http://127.0.0.1:3128", "-o", "https://o.test", "--eof-wait", "3",
            "-t", "hi", "--timings", "--headers", "A: 1, B: 2", "-s", "chat", "superchat", "wss://h/feed",
        ])
        #expect(options.url == "wss://h/feed")
        #expect(options.verbosity == 2)
        #expect(options.raw)
        #expect(options.timings)
        #expect(options.eofWait == .seconds(3))
        #expect(options.initialText == "hi")
        #expect(options.configuration.tls.allowUntrustedCertificates)
        #expect(options.configuration.proxy == "http://127.0.0.1:3128")
        #expect(options.configuration.origin == "https://o.test")
        #expect(options.configuration.subprotocols == ["chat", "superchat"])
        #expect(options.configuration.headers == ["A": "1", "B": "2"])
    }

    @Test func ourOwnFlags() throws {
        let options = try WSDump.sessionOptions(from: [
            "ws://h/", "-H", "Authorization: Bearer a,b", "-H", "X-Two: 2", "--binary", "--hex", "--jsonl",
            "--count", "3", "--timeout", "1.5", "--reconnect", "--ping-interval", "0", "--no-compression", "--show-secrets",
        ])
        #expect(options.configuration.headers == ["Authorization": "Bearer a,b", "X-Two": "2"])
        #expect(options.sendsLinesAsBinary && options.hexDump && options.jsonLines && options.reconnect && options.showsSecrets)
        #expect(options.count == 3)
        #expect(options.timeout == .milliseconds(1500))
        #expect(options.configuration.pingInterval == nil)
        #expect(!options.configuration.compression.isEnabled)
        let tls = try WSDump.sessionOptions(from: ["wss://h/", "--ca-file", "/etc/hostname", "--cert", "/etc/hostname", "--key", "/etc/hosts"])
        #expect(tls.configuration.tls.trustedCAFile == "/etc/hostname")
        #expect(tls.configuration.tls.clientCertificateFile == "/etc/hostname")
        #expect(tls.configuration.tls.clientKeyFile == "/etc/hosts")
        #expect(!tls.configuration.tls.allowUntrustedCertificates)
        let pinned = try WSDump.sessionOptions(from: [
            "wss://10.0.0.1/", "--pin", "sha256/a", "--pin", "sha256/b", "--servername", "api.example.org",
        ])
        #expect(pinned.configuration.tls.pinnedPublicKeys == ["sha256/a", "sha256/b"])
        #expect(pinned.configuration.tls.serverName == "api.example.org")
        let defaults = try WSDump.sessionOptions(from: ["ws://h/"])
        #expect(defaults.configuration.pingInterval == .seconds(20))
        #expect(defaults.configuration.compression.isEnabled)
    }

    @Test(arguments: [
        ["http://h/"], ["ws://h/", "-H", "no colon"], ["ws://h/", "--count", "0"], ["ws://h/", "--timeout", "0"],
        ["ws://h/", "--cert", "/etc/hostname"], ["ws://h/", "--json", "--jsonl"], ["ws://h/", "--file", "/no/such/file"],
        ["ws://h/", "--send-file", "/no/such/file"], ["ws://h/", "--stream", "--reconnect"],
        ["ws://h/", "--send-file", "/etc/hostname", "--reconnect"], ["ws://h/", "--stream", "--jsonl"],
        ["ws://h/", "--file", "/etc/hostname", "--send-file", "/etc/hostname"],
    ])
    func invalidCommandLinesAreRejected(arguments: [String]) {
        #expect(throws: (any Error).self) { try WSDump.sessionOptions(from: arguments) }
    }

    @Test func headerArguments() throws {
        let single = try HeaderArguments.parse("  X-A :  1, 2 ")
        #expect(single.name == "X-A" && single.value == "1, 2")
        let list = try HeaderArguments.parseList("A: 1, B: 2,")
        #expect(list.map(\.name) == ["A", "B"])
        #expect(list.map(\.value) == ["1", "2"])
        #expect(throws: HeaderArguments.Invalid.self) { try HeaderArguments.parse(": x") }
    }
}
