import ArgumentParser
import Foundation
import WebSocketStreams

/// The `wsdump` command: its flags (a superset of Python wsdump's) and their validation.
///
/// Parsing only: ``Main`` preprocesses the arguments and maps errors to exit codes, and
/// ``Session`` does the work.
struct WSDump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wsdump",
        abstract: "Connect to a WebSocket server, send what you type or pipe in, and show everything it sends back.",
        discussion: """
            Accepts Python wsdump's command lines (-v N included). Each input line is sent as a text message \
            (binary with --binary). Received data goes to standard output; status lines \
            (connected, closed, errors, -v details) go to standard error. In a pipe, standard \
            output carries nothing but the data, one message per line, without escape codes.

            On a terminal wsdump shows a "> " prompt with line editing; received messages \
            print above it. Commands at the prompt: /ping [text], /close [code [reason]], \
            /binary HEX, /help; start a line with // to send a line beginning with /. \
            Ctrl-D on an empty line closes with 1000, Ctrl-C closes with 1001. Colors are \
            used on terminals only, and never when NO_COLOR is set.

            When input ends, wsdump waits --eof-wait seconds (still printing what arrives), \
            or until --wait-replies messages have arrived, then closes with 1000 and waits for \
            the server's close: a server may drop a request followed at once by a close, and \
            may stop sending what it had not sent yet when a close arrives. When input ends \
            before anything was sent (wsdump URL </dev/null), wsdump only listens: it prints \
            what arrives until the server closes, --count, --timeout or Ctrl-C, as --listen \
            (which does not read input at all) does. With --reconnect, lines \
            wait for the next connection, but end of input and signals end the session at \
            once. Messages that were never sent are named on standard error (status 1).

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The ws://, wss://, ws+unix:// or wss+unix:// URL to connect to.")
    var url: String

    @OptionGroup(title: "Connection")
    var connection: ConnectionOptions

    @OptionGroup(title: "TLS")
    var tls: TLSOptions

    @OptionGroup(title: "Compression")
    var compression: CompressionOptions

    @OptionGroup(title: "Sending")
    var sending: SendingOptions

    @OptionGroup(title: "Output")
    var output: OutputOptions

    @OptionGroup(title: "Ending")
    var ending: EndingOptions

    @OptionGroup(title: "Recording")
    var recording: RecordingOptions

    func validate() throws {
        if connection.noProxy, connection.proxy != nil { throw ValidationError("--proxy and --no-proxy exclude each other") }
        _ = try makeSessionOptions()
    }

    func run() async throws {
        let session = Session(options: try makeSessionOptions())
        let status = await session.run()
        // A failed --header-command ends wsdump with the command's own status.
        if let commandStatus = session.headerCommandStatus { throw ExitCode(commandStatus) }
        if status != .normalClose { throw ExitCode(status.rawValue) }
    }

    /// The session options for a whole command line (without the program name), with
    /// Python-style arguments rewritten first.
    static func sessionOptions(from arguments: [String]) throws -> SessionOptions {
        try parse(ArgumentPreprocessing.rewrite(arguments)).makeSessionOptions()
    }

    /// The options for the session, or a `ValidationError` saying what is wrong.
    func makeSessionOptions() throws -> SessionOptions {
        do {
            try WebSocket.validateURL(url)
        } catch {
            throw ValidationError(String(describing: error))
        }
        var configuration = WebSocketConfiguration()
        // -vv shows the handshake as the SDK reports it: redacted unless --show-secrets.
        configuration.redactsSecretsInLogs = !output.showSecrets
        try connection.apply(to: &configuration, url: url)
        compression.apply(to: &configuration)
        try tls.apply(to: &configuration)
        try checkCombinations()
        if let record = recording.record {
            guard let file = fopen(record, "w") else {
                throw ValidationError("--record: cannot write '\(record)': \(String(cString: strerror(errno)))")
            }
            fclose(file)
        }
        if recording.record != nil, connection.reconnect || output.stream {
            throw ValidationError("--record writes one conversation of whole messages: it cannot be combined with --reconnect or --stream")
        }
        if output.stream, output.jsonl || output.json {
            throw ValidationError("--stream cannot be combined with --json or --jsonl (they need whole messages)")
        }
        configuration.streamsIncomingMessages = output.stream
        if let maxMessageSize = connection.maxMessageSize {
            guard maxMessageSize > 0 else { throw ValidationError("--max-message-size must be at least 1 byte") }
            configuration.maxMessageSize = maxMessageSize
            if output.stream { configuration.maxStreamedMessageSize = maxMessageSize }
        }
        for path in tls.files + [sending.file, sending.sendFile].compactMap(\.self)
        where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read '\(path)'")
        }
        guard sending.eofWait >= 0 else { throw ValidationError("--eof-wait must be 0 or more seconds") }
        if let count = ending.count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let waitReplies = ending.waitReplies, waitReplies < 1 { throw ValidationError("--wait-replies must be at least 1") }
        if let timeout = ending.timeout, timeout <= 0 { throw ValidationError("--timeout must be more than 0 seconds") }
        if output.json, output.jsonl { throw ValidationError("--json and --jsonl cannot be combined") }

        var options = SessionOptions(url: url, configuration: configuration)
        options.verbosity = output.verbose
        options.raw = output.raw
        options.timings = output.timings
        options.eofWait = .seconds(sending.eofWait)
        options.initialText = sending.text
        options.file = sending.file
        options.streamedFile = sending.sendFile
        options.streamsMessages = output.stream
        options.sendsLinesAsBinary = sending.binary
        options.hexDump = output.hex
        options.prettyJSON = output.json
        options.jsonLines = output.jsonl
        options.count = ending.count
        options.waitReplies = ending.waitReplies
        options.requireReply = ending.requireReply
        options.timeout = ending.timeout.map { .seconds($0) }
        options.reconnect = connection.reconnect
        options.headerCommand = connection.headerCommand.map(HeaderCommand.init(command:))
        options.showsSecrets = output.showSecrets
        options.recordPath = recording.record
        options.listens = sending.listen
        return options
    }

    /// Refuses options that exclude each other across groups.
    private func checkCombinations() throws {
        if sending.file != nil, sending.sendFile != nil { throw ValidationError("--file and --send-file cannot be combined") }
        if connection.reconnect, sending.sendFile != nil || output.stream {
            throw ValidationError("--send-file and --stream need one connection: they cannot be combined with --reconnect")
        }
    }
}
