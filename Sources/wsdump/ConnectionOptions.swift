import ArgumentParser
import WebSocketStreams

/// `wsdump`'s Connection options: where and how to connect: proxy, headers, addresses, redirects, keep-alive and reconnecting.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Connect through this proxy: http://host:port (CONNECT), socks5://host:port or socks5h://host:port, with optional user:password@. Without it, https_proxy / http_proxy / all_proxy / no_proxy are honoured.",
        valueName: "url"))
    var proxy: String?

    @Flag(name: .customLong("no-proxy"), help: "Connect directly, ignoring the proxy environment variables.")
    var noProxy = false

    @Option(name: .shortAndLong, parsing: .upToNextOption, help: ArgumentHelp("Subprotocols to offer, most preferred first.", valueName: "protocol"))
    var subprotocols: [String] = []

    @Option(name: .shortAndLong, help: "The Origin header.")
    var origin: String?

    @Option(help: ArgumentHelp("Extra headers, comma-separated (Python wsdump style): \"A: 1, B: 2\".", valueName: "headers"))
    var headers: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("An extra header; repeatable, and the value may hold commas.", valueName: "Name: value"))
    var header: [String] = []

    @Option(name: .customLong("header-command"), help: ArgumentHelp("Run CMD (with /bin/sh -c) before every connection attempt, --reconnect ones too, and send each 'Name: value' line it prints as a header of that attempt; if it fails, wsdump ends with its exit status and shows its standard error.", valueName: "CMD"))
    var headerCommand: String?

    @Option(name: .customLong("sensitive-header"), help: ArgumentHelp("A header whose value is a secret besides Authorization, Proxy-Authorization and Cookie: dropped on a redirect to another origin and hidden in -v output; repeatable.", valueName: "name"))
    var sensitiveHeader: [String] = []

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

    @Option(name: .customLong("ping-interval"), help: ArgumentHelp("Seconds of silence before a keep-alive ping (default 20; 0 disables).", valueName: "seconds"))
    var pingInterval: Double?

    @Flag(help: "Reconnect with backoff when the connection drops, printing each state change.")
    var reconnect = false

    @Option(name: .customLong("max-message-size"), help: ArgumentHelp(
        "The largest message to accept, in bytes (default 16 MiB); a larger one closes with 1009 (or use --stream).",
        valueName: "bytes"))
    var maxMessageSize: Int?

    /// Sets the connection's part of `configuration` for `url`, or throws a
    /// `ValidationError` saying what is wrong.
    func apply(to configuration: inout WebSocketConfiguration, url: String) throws {
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
    }
}
