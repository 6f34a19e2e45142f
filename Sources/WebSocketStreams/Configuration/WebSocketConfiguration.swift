import Logging

/// Everything that shapes one connection, with defaults that suit most programs.
///
/// | Setting | Default | Meaning |
/// |---|---|---|
/// | ``headers`` | none | Extra request headers for the opening handshake |
/// | ``subprotocols`` | none | Offered in `Sec-WebSocket-Protocol`, in order of preference |
/// | ``origin`` | none | The `Origin` header |
/// | ``compression`` | `true` | Offer permessage-deflate (RFC 7692); window bits, context takeover, level and threshold in ``WebSocketCompression`` |
/// | ``tls`` | verify | Verify the server against the system CAs and the host name |
/// | ``connectTimeout`` | 10 s | Deadline for TCP, TLS and the HTTP upgrade together |
/// | ``connectionAttemptDelay`` | 250 ms | How long one address may take before the next is tried too (Happy Eyeballs) |
/// | ``resolver`` | the system's | Where host names get their addresses (`getaddrinfo`, or your own) |
/// | ``localAddress`` | any | The source address to connect from |
/// | ``maxRedirects`` | 5 | Redirects (301, 302, 303, 307, 308) followed; 0 follows none |
/// | ``pingInterval`` | 20 s | Idle keep-alive ping period; `nil` disables it |
/// | ``pongTimeout`` | 10 s | A ping unanswered this long ends the connection (``WebSocketError/pongTimeout``) |
/// | ``pingMode`` | `.idle` | Ping after silence (`.idle`) or on a schedule (`.periodic`) |
/// | ``heartbeat`` | none | An application heartbeat message and how to recognise its reply |
/// | ``tcpKeepalive`` / ``tcpUserTimeout`` | system | TCP keep-alive probes; how long unacknowledged data may wait (`TCP_USER_TIMEOUT`) |
/// | ``maxMessageSize`` | 16 MiB | Larger incoming messages close the connection with 1009 |
/// | ``maxFragmentsPerMessage`` | 131,072 | Incoming messages in more frames close the connection with 1009 |
/// | ``streamsIncomingMessages`` / ``maxStreamedMessageSize`` | `false` / none | Deliver each message in pieces as it arrives (``WebSocket/messageStreams``), within its own limit |
/// | ``maxBufferedMessages`` / ``maxBufferedBytes`` | 1,024 / 4 MiB | Unread messages held before reading pauses |
/// | ``maxBufferedSendBytes`` | 1 MiB | Unwritten bytes after which `send` waits |
/// | ``proxy`` | none | `.environment`, or an HTTP (CONNECT) or SOCKS5 proxy URL, e.g. `http://127.0.0.1:3128` |
/// | ``logger`` | silent | Receives the connection's and libwebsockets' log lines |
/// | ``redactsSecretsInLogs`` | `true` | Credentials never appear in those lines (nor in ``wireEventObserver``'s handshakes) |
/// | ``metrics`` | `MetricsSystem.factory` | Where swift-metrics go (nowhere until a backend is bootstrapped) |
/// | ``wireEventObserver`` | none | Sees the handshake and every ping, pong and close frame |
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.headers["Authorization"] = "Bearer \(token)"
/// configuration.subprotocols = ["graphql-transport-ws"]
/// configuration.pingInterval = .seconds(15)
/// let connection = try await WebSocket.connect(to: "wss://api.example.org/graphql", configuration: configuration)
/// ```
public struct WebSocketConfiguration: Sendable {
    /// Extra request headers sent with the opening handshake, e.g. `Authorization`.
    /// Names and values must not contain line breaks; `Host`, `Upgrade`, `Connection` and
    /// `Sec-WebSocket-*` are set by the SDK and may not be given here.
    public var headers: [String: String] = [:]

    /// Subprotocols offered to the server, most preferred first. The server's choice is
    /// ``WebSocket/subprotocol``; a server that supports none of them rejects the handshake.
    public var subprotocols: [String] = []

    /// The `Origin` header, for servers that check it.
    public var origin: String?

    /// Whether to offer permessage-deflate compression, and with which settings
    /// (``WebSocketCompression``; `true` and `false` still work). The server decides; when it
    /// declines, messages go uncompressed. Messages under ``WebSocketCompression/threshold``
    /// bytes, and those sent with `compress: false`, are never compressed.
    public var compression: WebSocketCompression = .enabled

    /// How the server's certificate is checked, and the client certificate to present.
    public var tls = TLS()

    /// The deadline for the whole opening handshake: TCP connect, TLS and the HTTP
    /// upgrade. Exceeding it throws ``WebSocketError/timedOut``.
    public var connectTimeout: Duration = .seconds(10)

    /// When a host name has several addresses, how long a connection attempt to one may go
    /// without an answer before an attempt to the next starts beside it (RFC 8305 Happy
    /// Eyeballs: IPv6 and IPv4 addresses interleaved, IPv6 first). The first attempt that
    /// connects wins and the others are closed; an attempt that fails starts the next at
    /// once. A host with one address is connected as it always was.
    public var connectionAttemptDelay: Duration = .milliseconds(250)

    /// Where host names get their addresses: `nil` (the default) asks the system
    /// (`getaddrinfo`, so `/etc/hosts` and DNS work as they do for curl); give your own for
    /// service discovery or tests. Addresses it returns must be numeric.
    public var resolver: WebSocketResolver?

    /// The local address connections are made from: a numeric IPv4 or IPv6 address of
    /// this host (the port is chosen at connect time), for hosts with several interfaces,
    /// or to open more than about 28,000 connections to one server by spreading them over
    /// several source addresses. Only the server's addresses of the same family are tried.
    /// `nil` (the default): the system chooses.
    public var localAddress: String?

    /// How many redirects of the upgrade request (301, 302, 303, 307, 308) are followed;
    /// 0 follows none, and the answer is a ``WebSocketError/handshakeRejected(status:headers:body:)``.
    ///
    /// A `Location` may be absolute (`http` and `https` become `ws` and `wss`) or relative.
    /// A redirect from `wss` to `ws` is never followed, nor one back to a URL already
    /// visited, nor one past this limit: each is a `handshakeRejected` error that names the
    /// chain. Once a hop goes to another origin (scheme, host or port), the
    /// ``sensitiveHeaders`` and the URL's user info are not sent on. ``connectTimeout``
    /// covers every hop; ``WebSocket/url`` is the URL finally connected, and a
    /// ``ReconnectingWebSocket`` reconnects to the URL it was given.
    public var maxRedirects = 5

    /// How long the connection may be idle before a keep-alive ping is sent; `nil` sends none.
    public var pingInterval: Duration? = .seconds(20)

    /// How long a keep-alive ping may go unanswered before the connection is dropped with
    /// ``WebSocketError/pongTimeout``.
    public var pongTimeout: Duration = .seconds(10)

    /// When keep-alive pings go out: `.idle` (the default) after ``pingInterval`` without
    /// anything received, `.periodic` every ``pingInterval`` whatever the traffic.
    public var pingMode: WebSocketPingMode = .idle

    /// An application-level heartbeat (a message of the server's own protocol and how to
    /// recognise its reply), for servers that close connections without one; `nil` (the
    /// default) sends none. See ``WebSocketHeartbeat``.
    public var heartbeat: WebSocketHeartbeat?

    /// TCP keep-alive: after this long without any packet from the peer the kernel sends
    /// probes (every third of it, three in all) and drops a peer that answers none, even
    /// when no keep-alive ping is configured. `nil` (the default): the system's setting
    /// (off for most sockets).
    public var tcpKeepalive: Duration?

    /// `TCP_USER_TIMEOUT`: how long written data may stay unacknowledged (or the peer's
    /// window stay closed) before the kernel drops the connection. Without it, a peer that
    /// vanishes while data is queued to it is found only after about 15 minutes of
    /// retransmissions. `nil` (the default): the system's behaviour.
    public var tcpUserTimeout: Duration?

    /// The largest incoming message accepted, in bytes (after decompression). A larger
    /// one closes the connection with 1009 and ``WebSocketError/messageTooLarge(limit:)``.
    public var maxMessageSize = 16 * 1024 * 1024

    /// The most frames one incoming message may arrive in. Every frame costs work however
    /// small it is, so without a limit a peer could send one message a byte per frame for
    /// as long as it likes. A message in more frames closes the connection with 1009 and
    /// code ``WebSocketError/Code/messageTooLarge``, whose reason names this limit.
    /// The default, 131,072, is node ws's.
    public var maxFragmentsPerMessage = 131_072

    /// Deliver each incoming message in pieces as it arrives, rather than gathered whole:
    /// for messages too large to hold (file transfers, log tails, dumps). Read them through
    /// ``WebSocket/messageStreams``; ``WebSocket/messages`` and
    /// ``WebSocket/messageBatches`` cannot be used on such a connection (they stop the
    /// program). ``maxStreamedMessageSize`` applies instead of ``maxMessageSize``; the
    /// pieces count against ``maxBufferedMessages`` and ``maxBufferedBytes`` as messages
    /// do, so a slow reader holds the peer back the same way. Default `false`.
    public var streamsIncomingMessages = false

    /// The largest incoming message accepted when ``streamsIncomingMessages`` is on, in
    /// bytes (after decompression); a larger one closes the connection with 1009. `nil`
    /// (the default): no limit, since a streamed message is never held whole.
    public var maxStreamedMessageSize: Int?

    /// Unread messages buffered before the connection stops reading from the socket
    /// (the peer is then held back by TCP flow control). Reading resumes once the
    /// consumer has drained the buffer to a quarter of both limits. The iterating task
    /// takes what is buffered in one batch, so the buffer refills while it works through
    /// that batch: at most about twice the limits are held at once.
    ///
    /// The default, 1,024, keeps a stream of small messages flowing without a pause per
    /// few dozen messages (at 64, a push of 128-byte messages ran at half the rate); for
    /// large messages ``maxBufferedBytes`` is the limit that applies.
    public var maxBufferedMessages = 1024

    /// Unread bytes buffered before the connection stops reading from the socket.
    public var maxBufferedBytes = 4 * 1024 * 1024

    /// Bytes accepted by `send` but not yet written, beyond which `send` waits until the
    /// backlog halves.
    public var maxBufferedSendBytes = 1024 * 1024

    /// The proxy to go through: ``WebSocketProxy/environment`` (the `https_proxy`,
    /// `http_proxy`, `all_proxy` and `no_proxy` variables, as curl reads them), or a proxy
    /// URL: `http://[user:password@]host:port` (a `CONNECT` tunnel), `socks5://...` or
    /// `socks5h://...`. `nil` (the default) connects directly; the environment is then
    /// not consulted.
    public var proxy: WebSocketProxy?

    /// Where the connection's log lines go, libwebsockets' own included. Silent by default.
    public var logger: Logger = .silent

    /// Whether libwebsockets' log lines have this connection's secrets replaced by
    /// `<redacted>`: the values of credential headers (`Authorization`, `Cookie`, any name
    /// with token, key, secret, password, session or auth in it), the URL's query values
    /// and user info. The handshake heads given to ``wireEventObserver`` are redacted the
    /// same way, and the server's `Set-Cookie` values too. On by default; turn it off only
    /// to debug authentication locally.
    public var redactsSecretsInLogs = true

    /// Names of request headers whose values are secrets, compared without regard to case;
    /// by default `Authorization`, `Proxy-Authorization` and `Cookie`. Add your own (an API
    /// key header such as `X-Api-Key`).
    ///
    /// On a redirect to another origin (scheme, host or port) every one of them is dropped,
    /// with the URL's user info. Their values are redacted wherever secrets are (log lines,
    /// ``wireEventObserver`` heads, wsdump's `-v`), per ``redactsSecretsInLogs``.
    /// `Proxy-Authorization` given in ``headers`` goes only on an HTTP proxy's `CONNECT`
    /// request, never to the server.
    public var sensitiveHeaders: Set<String> = ["Authorization", "Proxy-Authorization", "Cookie"]

    /// Where the connection's swift-metrics go and how they are labelled; see <doc:Metrics>.
    public var metrics = Metrics()

    /// Sees what the connection sends and receives besides data messages: the opening
    /// handshake's request and response head (secrets redacted per
    /// ``redactsSecretsInLogs``) and every ping, pong and close frame; see
    /// ``WebSocketWireEvent``. `nil` (the default) observes nothing.
    ///
    /// It is called on the event loop's thread, in the order things happen: it
    /// must return at once and never block (hand the event to a stream or a lock-protected
    /// buffer). A ``ReconnectingWebSocket`` calls it for each of its connections.
    ///
    /// ```swift
    /// let (events, continuation) = AsyncStream<WebSocketWireEvent>.makeStream()
    /// configuration.wireEventObserver = { continuation.yield($0) }
    /// ```
    public var wireEventObserver: (@Sendable (WebSocketWireEvent) -> Void)?

    /// A configuration with every default.
    public init() {}
}
