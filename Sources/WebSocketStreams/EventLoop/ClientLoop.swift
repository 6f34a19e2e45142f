import CLibWebSockets
import Glibc
import Logging

/// The service-thread side of a ``WebSocketEventLoop``: creates the lws context, keeps
/// one vhost per distinct TLS/proxy/compression setting, owns the connections of the
/// loop, and routes lws callbacks and log lines to them.
///
/// Only the loop's service thread touches this object after creation (all its methods
/// are `ServiceThreadDelegate` callbacks or are called from them), so its mutable state
/// needs no lock.
// @unchecked: confined to the loop's service thread; see above.
final class ClientLoop: ServiceThreadDelegate, @unchecked Sendable {
    /// What makes two connections need different vhosts.
    struct VhostKey: Hashable {
        var compression: Bool
        var trustedCAFile: String?
        var clientCertificateFile: String?
        var clientKeyFile: String?
        /// "address:port" of the HTTP proxy, already resolved.
        var proxy: String?
    }

    /// The largest frame written in one piece; larger messages go out as fragments of
    /// this size through one shared buffer, which bounds memory per connection.
    static let fragmentSize = 128 * 1024

    /// The largest fragment written when permessage-deflate is active. With lws's deflate
    /// output buffer raised to 64 KiB, zlib then always consumes the whole input in one
    /// call (at most 32 KiB plus the ~16.6 KiB it may hold back), so lws never enters its
    /// "draining" state, in which it keeps reading from the input pointer after `lws_write`
    /// returned: that pointer is the loop's shared write buffer, which the next connection
    /// overwrites.
    static let compressedFragmentSize = 32 * 1024
    /// Bytes written per writable callback before yielding to other connections.
    static let writeBudget = 256 * 1024

    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    nonisolated(unsafe) static let protocols = LWSStatics.makeProtocolTable(
        name: "websocketstreams-client", receiveBufferSize: 0, sendLimit: fragmentSize + 64)
    static let protocolName = "websocketstreams-client"

    private let loopLogger: Logger
    private var context: OpaquePointer?
    private var vhosts: [VhostKey: OpaquePointer] = [:]
    /// Strong references to the live connections, dropped at `LWS_CALLBACK_WSI_DESTROY`.
    private var connections: [ObjectIdentifier: ClientConnection] = [:]
    /// The connection whose callback is running, so lws log lines reach its logger.
    /// Unowned: set only for the duration of its callback, while `connections` holds it.
    private unowned(unsafe) var currentConnection: ClientConnection?
    private var whenAllClosed: (@Sendable () -> Void)?
    /// Consumers to resume once the current lws pass ends, with their messages.
    private var deliveries: [(consumer: InboundQueue.Consumer, message: WebSocketMessage)] = []

    /// `LWS_PRE` bytes of headroom followed by room for one fragment.
    let writeBuffer: UnsafeMutableRawPointer
    let writeHeadroom: Int

    init(logger: Logger) {
        loopLogger = logger
        writeHeadroom = wss_lws_pre()
        writeBuffer = .allocate(byteCount: writeHeadroom + Self.fragmentSize, alignment: 16)
    }

    deinit {
        writeBuffer.deallocate()
    }

    // MARK: - ServiceThreadDelegate

    func makeContext(contextUser: UnsafeMutableRawPointer) -> OpaquePointer? {
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(Self.protocols)
        info.extensions = UnsafePointer(LWSStatics.clientDeflateExtensions)
        // Send `origin` as given (lws otherwise prefixes "http://").
        info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) | UInt64(LWS_SERVER_OPTION_JUST_USE_RAW_ORIGIN)
        info.user = contextUser
        info.gid = -1
        info.uid = -1
        // Handshake deadlines are enforced per connection (connectTimeout); keep lws's
        // own shorter defaults (5 s per address, 20 s overall) out of the way.
        info.timeout_secs = 600
        info.connect_timeout_secs = 600
        info.retry_and_idle_policy = UnsafePointer(LWSStatics.noValidityPings)
        let vhostName = LWSStatics.clientDefaultVhostName
        info.vhost_name = vhostName
        guard let (context, vhost) = LWSContextFactory.makeContext(&info) else { return nil }
        self.context = context
        disableEnvironmentProxy(vhost)
        vhosts[VhostKey(compression: true)] = vhost
        return context
    }

    func handleCallback(
        wsi: OpaquePointer?, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        guard let wsi, let opaque = lws_get_opaque_user_data(wsi) else { return 0 }
        let connection = Unmanaged<ClientConnection>.fromOpaque(opaque).takeUnretainedValue()
        currentConnection = connection
        defer { currentConnection = nil }
        let result = connection.transport.handle(
            connection, wsi: wsi, reason: reason, user: user, input: input, length: length, loop: self)
        if reason == LWS_CALLBACK_WSI_DESTROY {
            lws_set_opaque_user_data(wsi, nil)
            release(connection)
        }
        return result
    }

    func log(level: Int32, line: String) {
        let logger = currentConnection?.logger ?? loopLogger
        let logLevel = ServiceThreadLogging.logLevel(forLWSLevel: level)
        // lws's mask is process-wide: most lines reach a logger that drops them. Decide that
        // first; redacting costs a search per secret.
        guard logger.logLevel <= logLevel else { return }
        var line = line
        if let connection = currentConnection {
            if let redactor = connection.transport.redactor { line = redactor.redact(line) }
        } else {
            // Not attributable to one connection: keep every live connection's secrets out.
            for connection in connections.values {
                if let redactor = connection.transport.redactor { line = redactor.redact(line) }
            }
        }
        logger.log(level: logLevel, "\(line)", metadata: ["lws": "\(level)"])
    }

    func willDestroyContext(_ context: OpaquePointer) {
        self.context = nil
    }

    /// Whether lws is destroying the context, closing every connection still open (the
    /// context is forgotten just before; connections exist only while it does).
    var isDestroyingContext: Bool { context == nil }

    func serviceTurnEnded() {
        guard !deliveries.isEmpty else { return }
        var batch: [(consumer: InboundQueue.Consumer, message: WebSocketMessage)] = []
        swap(&batch, &deliveries)
        for (consumer, message) in batch { consumer.resume(returning: message) }
        batch.removeAll(keepingCapacity: true)
        if deliveries.isEmpty { deliveries = batch }
    }

    /// Resumes `consumer` with `message` when the current pass ends (service thread).
    func deliverAfterTurn(_ consumer: InboundQueue.Consumer, _ message: WebSocketMessage) {
        deliveries.append((consumer, message))
    }

    // MARK: - Connections

    /// Starts the handshake for `connection` (service thread).
    func open(_ connection: ClientConnection) {
        guard let context else {
            connection.transport.failBeforeConnect(connection, .connectionFailed("the event loop has been shut down"))
            return
        }
        let key = connection.vhostKey
        let vhost: OpaquePointer
        switch self.vhost(for: key, context: context) {
        case .success(let found): vhost = found
        case .failure(let error):
            connection.transport.failBeforeConnect(connection, error)
            return
        }
        connections[ObjectIdentifier(connection)] = connection
        // lws's log mask is process-global state: only ever changed on a service thread.
        // The level claimed is remembered: a handler may report another level later.
        let level = connection.logger.logLevel
        connection.transport.claimedLogLevel = level
        ServiceThreadLogging.claim(for: level)
        connection.transport.connect(connection, context: context, vhost: vhost, loop: self)
    }

    private func release(_ connection: ClientConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if let level = connection.transport.claimedLogLevel {
            connection.transport.claimedLogLevel = nil
            ServiceThreadLogging.releaseClaim(for: level)
        }
        if connections.isEmpty, let whenAllClosed {
            self.whenAllClosed = nil
            whenAllClosed()
        }
    }

    /// Forgets a connection whose `lws_client_connect_via_info` produced no wsi.
    func forget(_ connection: ClientConnection) {
        release(connection)
    }

    /// How many connections the loop still holds (service thread).
    var liveConnectionCount: Int { connections.count }

    /// Asks every connection to close with 1001 and calls `done` when none is left.
    func closeAll(then done: @escaping @Sendable () -> Void) {
        if connections.isEmpty {
            done()
            return
        }
        whenAllClosed = done
        for connection in connections.values {
            connection.closeForShutdown()
        }
    }

    // MARK: - Vhosts

    private func vhost(for key: VhostKey, context: OpaquePointer) -> Result<OpaquePointer, WebSocketError> {
        if let vhost = vhosts[key] { return .success(vhost) }
        for path in [key.trustedCAFile, key.clientCertificateFile, key.clientKeyFile].compactMap({ $0 }) {
            if access(path, R_OK) != 0 {
                return .failure(.invalidConfiguration("cannot read '\(path)': \(String(cString: strerror(errno)))"))
            }
        }
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(Self.protocols)
        info.extensions = key.compression ? UnsafePointer(LWSStatics.clientDeflateExtensions) : nil
        info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
        info.retry_and_idle_policy = UnsafePointer(LWSStatics.noValidityPings)
        info.vhost_name = LWSStatics.clientVhostName
        let created: OpaquePointer? = withOptionalCString(key.trustedCAFile) { ca in
            withOptionalCString(key.clientCertificateFile) { certificate in
                withOptionalCString(key.clientKeyFile) { privateKey in
                    withOptionalCString(key.proxy) { proxy in
                        info.client_ssl_ca_filepath = ca
                        info.client_ssl_cert_filepath = certificate
                        info.client_ssl_private_key_filepath = privateKey
                        info.http_proxy_address = proxy
                        return lws_create_vhost(context, &info)
                    }
                }
            }
        }
        guard let created else {
            if key.trustedCAFile != nil || key.clientCertificateFile != nil {
                return .failure(.tlsFailure("the certificate or key files could not be loaded (not PEM, or the key does not match)"))
            }
            return .failure(.connectionFailed("libwebsockets could not create a client vhost"))
        }
        if key.proxy == nil { disableEnvironmentProxy(created) }
        vhosts[key] = created
        return .success(created)
    }

    /// lws reads `http_proxy` from the environment for every vhost without an explicit
    /// proxy, ignoring `no_proxy`; that would send even loopback traffic to a proxy.
    /// Proxies are configured explicitly (``WebSocketConfiguration/proxy``) instead.
    private func disableEnvironmentProxy(_ vhost: OpaquePointer) {
        guard getenv("http_proxy") != nil else { return }
        _ = lws_set_proxy(vhost, ":0")
    }
}

/// Calls `body` with a C string for `string`, or `nil`.
package func withOptionalCString<Result>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
