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

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Connect through this proxy: http://host:port (CONNECT), socks5://host:port or socks5h://host:port, with optional user:password@. Without it, https_proxy / http_proxy / all_proxy / no_proxy are honoured.",
        valueName: "url"))
    var proxy: String?

    @Flag(name: .customLong("no-proxy"), help: "Connect directly, ignoring the proxy environment variables.")
    var noProxy = false

    @Flag(name: .shortAndLong, help: "-v: show each message's type and sent messages; -vv (or -v 2): also the handshake headers and ping, pong and close frames.")
    var verbose: Int

    @Flag(name: .shortAndLong, help: "Accept any server certificate (self-signed, expired, other host).")
    var nocert = false

    @Flag(name: .shortAndLong, help: "Print received messages without prefix, type or color, and read input lines without the line editor.")
    var raw = false

    @Option(name: .shortAndLong, parsing: .upToNextOption, help: ArgumentHelp("Subprotocols to offer, most preferred first.", valueName: "protocol"))
    var subprotocols: [String] = []

    @Option(name: .shortAndLong, help: "The Origin header.")
    var origin: String?

    @Option(name: .customLong("eof-wait"), help: ArgumentHelp("Seconds to wait after input ends before closing.", valueName: "seconds"))
    var eofWait: Double = 0

    @Option(name: .shortAndLong, help: "Text to send once, right after connecting.")
    var text: String?

    @Flag(help: "Print the seconds since connecting before each received message.")
    var timings = false

    @Option(help: ArgumentHelp("Extra headers, comma-separated (Python wsdump style): \"A: 1, B: 2\".", valueName: "headers"))
    var headers: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("An extra header; repeatable, and the value may hold commas.", valueName: "Name: value"))
    var header: [String] = []

    @Option(name: .customLong("header-command"), help: ArgumentHelp("Run CMD (with /bin/sh -c) before every connection attempt, --reconnect ones too, and send each 'Name: value' line it prints as a header of that attempt; if it fails, wsdump ends with its exit status and shows its standard error.", valueName: "CMD"))
    var headerCommand: String?

    @Option(name: .customLong("sensitive-header"), help: ArgumentHelp("A header whose value is a secret besides Authorization, Proxy-Authorization and Cookie: dropped on a redirect to another origin and hidden in -v output; repeatable.", valueName: "name"))
    var sensitiveHeader: [String] = []

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("A PEM file of CA certificates to trust besides the system's.", valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("A PEM client certificate to present (with --key).", valueName: "path"))
    var cert: String?

    @Option(help: ArgumentHelp("The PEM private key of --cert.", valueName: "path"))
    var key: String?

    @Option(help: ArgumentHelp("A public-key pin the server's chain must hold (as curl's --pinnedpubkey); repeatable.", valueName: "sha256/BASE64"))
    var pin: [String] = []

    @Option(help: ArgumentHelp("The TLS server name to send and verify, when it is not the URL's host.", valueName: "name"))
    var servername: String?

    @Option(help: ArgumentHelp(
        "Use ADDR for HOST (curl's --resolve; repeatable, several ADDRs comma-separated are raced); PORT must be the URL's.",
        valueName: "HOST:PORT:ADDR"))
    var resolve: [String] = []

    @Option(name: .customLong("connect-to"), help: ArgumentHelp(
        "Connect to this address whatever the URL's host resolves to (Host, SNI and certificate checks keep the URL's name).",
        valueName: "ADDR"))
    var connectTo: String?

    @Option(name: .customLong("max-redirects"), help: ArgumentHelp("Redirects of the upgrade to follow (default 5; 0 follows none).", valueName: "n"))
    var maxRedirects: Int?

    @Option(name: .customLong("local-address"), help: ArgumentHelp("The local IP address to connect from.", valueName: "ADDR"))
    var localAddress: String?

    @Flag(help: "Do not read standard input: print what the server sends until it closes, --count, --timeout or Ctrl-C (-t and --file are still sent).")
    var listen = false

    @Option(name: .customLong("max-message-size"), help: ArgumentHelp(
        "The largest message to accept, in bytes (default 16 MiB); a larger one closes with 1009 (or use --stream).",
        valueName: "bytes"))
    var maxMessageSize: Int?

    @Flag(help: "Send input lines as binary messages.")
    var binary = false

    @Option(help: ArgumentHelp("Send this file as one binary message after connecting (with a progress bar on a terminal).", valueName: "path"))
    var file: String?

    @Option(name: .customLong("send-file"), help: ArgumentHelp(
        "Like --file, but read and sent in pieces as one message, so a file of any size costs no more memory than a few pieces.",
        valueName: "path"))
    var sendFile: String?

    @Flag(help: "Print each received message as it arrives, piece by piece, instead of holding it whole: text as it comes; binary as its size (with -r, its bytes).")
    var stream = false

    @Flag(help: "Show binary messages as a full hex dump (default: the size and the first 16 bytes).")
    var hex = false

    @Flag(help: "Pretty-print text messages that are JSON objects or arrays.")
    var json = false

    @Flag(help: "Write one JSON object per event (time, direction, type, data or base64, code, reason, error) on standard output.")
    var jsonl = false

    @Option(help: ArgumentHelp(
        "Record the conversation (every message both ways and the ending, with times) as JSON lines in this file, for `TestServer --replay`.",
        valueName: "path"))
    var record: String?

    @Option(help: ArgumentHelp("Close with 1000 and exit after this many received messages.", valueName: "n"))
    var count: Int?

    @Option(name: .customLong("wait-replies"), help: ArgumentHelp(
        "When input ends, wait until this many messages have arrived in all before closing (for at most --eof-wait seconds, else 10).",
        valueName: "n"))
    var waitReplies: Int?

    @Flag(name: .customLong("require-reply"), help: "Exit with status 6 when no message was received.")
    var requireReply = false

    @Option(help: ArgumentHelp("Close with 1000 and exit with status 4 after this many seconds.", valueName: "seconds"))
    var timeout: Double?

    @Flag(help: "Reconnect with backoff when the connection drops, printing each state change.")
    var reconnect = false

    @Option(name: .customLong("ping-interval"), help: ArgumentHelp("Seconds of silence before a keep-alive ping (default 20; 0 disables).", valueName: "seconds"))
    var pingInterval: Double?

    @Flag(name: [.customLong("no-compress"), .customLong("no-compression")], help: "Do not offer permessage-deflate compression.")
    var noCompression = false

    @Option(name: .customLong("client-max-window-bits"), help: ArgumentHelp("Offer client_max_window_bits=N (8-15): the window this client compresses with.", valueName: "bits"))
    var clientMaxWindowBits: Int?

    @Option(name: .customLong("server-max-window-bits"), help: ArgumentHelp("Offer server_max_window_bits=N (8-15): the window the server may compress with.", valueName: "bits"))
    var serverMaxWindowBits: Int?

    @Flag(name: .customLong("client-no-context-takeover"), help: "Offer client_no_context_takeover: compress every message with an empty window.")
    var clientNoContextTakeover = false

    @Flag(name: .customLong("server-no-context-takeover"), help: "Ask the server for server_no_context_takeover.")
    var serverNoContextTakeover = false

    @Flag(name: .customLong("show-secrets"), help: "Show Authorization, Cookie and other secret values in -v output instead of <redacted>.")
    var showSecrets = false

    func validate() throws {
        if noProxy, proxy != nil { throw ValidationError("--proxy and --no-proxy exclude each other") }
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
        configuration.redactsSecretsInLogs = !showSecrets
        do {
            let listed = try headers.map(HeaderArguments.parseList) ?? []
            for header in listed + (try header.map(HeaderArguments.parse)) {
                configuration.headers[header.name] = header.value
            }
        } catch {
            throw ValidationError(String(describing: error))
        }
        for name in sensitiveHeader {
            guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0 == ":" }) else {
                throw ValidationError("--sensitive-header '\(name)' is not a header name")
            }
            configuration.sensitiveHeaders.insert(name)
        }
        configuration.subprotocols = subprotocols
        configuration.origin = origin
        configuration.proxy = noProxy ? nil : proxy.map { WebSocketProxy($0) } ?? WebSocketProxy.environment
        configuration.compression = WebSocketCompression(isEnabled: !noCompression)
        configuration.compression.clientMaxWindowBits = clientMaxWindowBits
        configuration.compression.serverMaxWindowBits = serverMaxWindowBits
        configuration.compression.clientNoContextTakeover = clientNoContextTakeover
        configuration.compression.serverNoContextTakeover = serverNoContextTakeover
        configuration.tls.allowUntrustedCertificates = nocert
        configuration.tls.trustedCAFile = caFile
        configuration.tls.clientCertificateFile = cert
        configuration.tls.clientKeyFile = key
        configuration.tls.pinnedPublicKeys = pin
        configuration.tls.serverName = servername
        if let localAddress, !AddressOverrides.isNumeric(localAddress) {
            throw ValidationError("--local-address '\(localAddress)' is not a numeric IPv4 or IPv6 address")
        }
        configuration.localAddress = localAddress
        if let maxRedirects {
            guard maxRedirects >= 0 else { throw ValidationError("--max-redirects must be 0 or more") }
            configuration.maxRedirects = maxRedirects
        }
        do {
            configuration.resolver = try AddressOverrides.resolver(resolve: resolve, connectTo: connectTo, url: url)
        } catch {
            throw ValidationError(String(describing: error))
        }
        if let pingInterval {
            guard pingInterval >= 0 else { throw ValidationError("--ping-interval must be 0 or more seconds") }
            configuration.pingInterval = pingInterval == 0 ? nil : .seconds(pingInterval)
        }
        guard (cert == nil) == (key == nil) else { throw ValidationError("--cert and --key must be given together") }
        if file != nil, sendFile != nil { throw ValidationError("--file and --send-file cannot be combined") }
        if reconnect, sendFile != nil || stream {
            throw ValidationError("--send-file and --stream need one connection: they cannot be combined with --reconnect")
        }
        if let record {
            guard let file = fopen(record, "w") else {
                throw ValidationError("--record: cannot write '\(record)': \(String(cString: strerror(errno)))")
            }
            fclose(file)
        }
        if record != nil, reconnect || stream {
            throw ValidationError("--record writes one conversation of whole messages: it cannot be combined with --reconnect or --stream")
        }
        if stream, jsonl || json { throw ValidationError("--stream cannot be combined with --json or --jsonl (they need whole messages)") }
        configuration.streamsIncomingMessages = stream
        if let maxMessageSize {
            guard maxMessageSize > 0 else { throw ValidationError("--max-message-size must be at least 1 byte") }
            configuration.maxMessageSize = maxMessageSize
            if stream { configuration.maxStreamedMessageSize = maxMessageSize }
        }
        for path in [caFile, cert, key, file, sendFile].compactMap(\.self) where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read '\(path)'")
        }
        guard eofWait >= 0 else { throw ValidationError("--eof-wait must be 0 or more seconds") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let waitReplies, waitReplies < 1 { throw ValidationError("--wait-replies must be at least 1") }
        if let timeout, timeout <= 0 { throw ValidationError("--timeout must be more than 0 seconds") }
        if json, jsonl { throw ValidationError("--json and --jsonl cannot be combined") }

        var options = SessionOptions(url: url, configuration: configuration)
        options.verbosity = verbose
        options.raw = raw
        options.timings = timings
        options.eofWait = .seconds(eofWait)
        options.initialText = text
        options.file = file
        options.streamedFile = sendFile
        options.streamsMessages = stream
        options.sendsLinesAsBinary = binary
        options.hexDump = hex
        options.prettyJSON = json
        options.jsonLines = jsonl
        options.count = count
        options.waitReplies = waitReplies
        options.requireReply = requireReply
        options.timeout = timeout.map { .seconds($0) }
        options.reconnect = reconnect
        options.headerCommand = headerCommand.map(HeaderCommand.init(command:))
        options.showsSecrets = showSecrets
        options.recordPath = record
        options.listens = listen
        return options
    }
}
