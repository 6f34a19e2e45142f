import LibWebSocketsLoop
import SynchronizationSupport
import CLibWebSockets
import Glibc
import Logging
import WebSocketStreams

/// The service-thread side of a ``TestServer``: creates the listening context, answers
/// the upgrade for each route, and runs each connection's behaviour.
///
/// Only the server's loop thread uses it after ``makeContext(contextUser:)`` (every
/// other method is an lws callback or posted work), so its mutable state needs no lock.
// @unchecked: confined to the server's loop thread; see above.
final class ServerLoop: EventLoopThreadDelegate, @unchecked Sendable {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var compression: Bool
        var certificates: TestCertificates?
        var recordTexts: Bool
        var logger: Logger
        /// A Unix domain socket to listen on as well (`ws+unix:` URLs), or `nil`.
        var unixSocketPath: String? = nil
        /// Paths served by handlers of the server's user.
        var handlers: [String: TestServer.Handler] = [:]
        /// A handler for every path, built-in ones included (`TestServer --replay`).
        var fallbackHandler: TestServer.Handler? = nil
    }

    /// lws's server frame parser corrupts compressed input when permessage-deflate has to
    /// "drain" (inflate a received chunk over several passes): bytes that arrive meanwhile
    /// overwrite input it has not inflated yet (the lws client parser does not have this
    /// bug). A 1 MiB receive buffer, which also caps the inflate buffer, keeps draining to
    /// chunks that inflate more than 1 MiB. lws allocates it per connection, but pages are
    /// only touched as data arrives.
    static let receiveBufferSize = 1024 * 1024
    static let pushCapacity = 1024 * 1024
    static let rawProtocolName = "test-server-raw"
    /// Subprotocols the server accepts; a client offering only others is rejected.
    static let subprotocols = ["chat", "superchat", "json"]

    /// The protocol table of a server whose handlers add `extraSubprotocols`: one per list,
    /// made once and kept for the process (lws reads it as long as a context lives).
    static func protocols(extraSubprotocols: [String]) -> UnsafeMutablePointer<lws_protocols> {
        let names = ["test-server"] + subprotocols + extraSubprotocols.filter { !subprotocols.contains($0) } + [rawProtocolName]
        return protocolTables.withLock { tables in
            if let table = tables[names] { return table.pointer }
            let table = makeProtocolTable(names)
            tables[names] = .init(pointer: table)
            return table
        }
    }

    /// A table pointer, kept in ``protocolTables``.
    // @unchecked: the table is written once before it is shared, then only read (by lws).
    private struct ProtocolTable: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<lws_protocols>
    }

    private static let protocolTables = AnnotatedMutex([[String]: ProtocolTable]())

    private static func makeProtocolTable(_ names: [String]) -> UnsafeMutablePointer<lws_protocols> {
        let table = UnsafeMutablePointer<lws_protocols>.allocate(capacity: names.count + 1)
        table.initialize(repeating: lws_protocols(), count: names.count + 1)
        for (index, name) in names.enumerated() {
            table[index].name = LWSStatics.immortalCString(name)
            table[index].callback = eventLoopThreadCallback
            table[index].rx_buffer_size = receiveBufferSize
            // lws's default send limit (the receive buffer size) would make big frames partial.
            table[index].tx_packet_size = 256 * 1024
        }
        return table
    }

    let settings: Settings
    let recorder: ServerRecorder
    private(set) var boundPort = 0
    var context: OpaquePointer?
    var vhost: OpaquePointer?
    var connections: [ObjectIdentifier: AnyObject] = [:]
    var pendingRawPeer: RawPeer?
    /// New TCP connections are dropped at accept until this instant.
    var refuseUntil: ContinuousClock.Instant?
    /// Sockets taken from lws, waiting to be adopted back as raw sockets on the next pass.
    var pendingAdoptions: [(peer: RawPeer, descriptor: Int32)] = []
    /// Handler connections by id, for the work their handlers post.
    var handlerConnections: [Int: ServerConnection] = [:]
    /// Runs handler bodies; set before the loop starts when the server has handlers.
    var runner: HandlerRunner?
    /// The thread that services this loop; set right after both are created.
    weak var thread: EventLoopThread?
    let pushBuffer: UnsafeMutableRawPointer
    /// The listen address as C text: lws keeps the pointer in the vhost, so it must live
    /// as long as the context, not just through `makeContext`.
    private let interface: UnsafeMutablePointer<CChar>
    /// The Unix socket's path as C text, kept for the same reason.
    private let unixInterface: UnsafeMutablePointer<CChar>?
    /// Whether the Unix domain socket listener was created (loop thread, before `start` returns).
    private(set) var listensOnUnixSocket = false

    init(settings: Settings, recorder: ServerRecorder) {
        self.settings = settings
        self.recorder = recorder
        pushBuffer = .allocate(byteCount: ServerConnection.headroom + Self.pushCapacity, alignment: 16)
        interface = strdup(settings.host)
        unixInterface = settings.unixSocketPath.map { strdup($0) }
    }

    deinit {
        free(interface)
        free(unixInterface)
        pushBuffer.deallocate()
    }

    // MARK: - EventLoopThreadDelegate

    func makeContext(contextUser: UnsafeMutableRawPointer, foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> OpaquePointer? {
        var info = lws_context_creation_info()
        info.port = Int32(settings.port)
        // Raw routes (e.g. /frame-echo) read this much per pass, as the client does.
        info.pt_serv_buf_size = 256 * 1024
        let extraSubprotocols = (Array(settings.handlers.values) + [settings.fallbackHandler].compactMap { $0 })
            .flatMap(\.subprotocols)
        info.protocols = UnsafePointer(Self.protocols(extraSubprotocols: extraSubprotocols))
        info.extensions = settings.compression ? UnsafePointer(ServerTables.deflateExtensions) : nil
        info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) | UInt64(LWS_SERVER_OPTION_VALIDATE_UTF8)
        // lws 4.1.6 binds an IPv6 socket to every address when given an IPv4 `iface`: with
        // IPv6 off for an IPv4 host, it listens on that address only (loopback stays loopback).
        if !settings.host.contains(":") { info.options |= UInt64(LWS_SERVER_OPTION_DISABLE_IPV6) }
        info.user = contextUser
        info.gid = -1
        info.uid = -1
        info.timeout_secs = 30
        // No validity pings: lws would keep a timer per connection in its sorted list, and
        // each new connection's insert walks all of them (a quarter of the server's CPU while
        // 15,000 connections open). Clients ping as they are told to.
        info.retry_and_idle_policy = UnsafePointer(LWSStatics.noValidityPings)
        let vhostName = ServerTables.vhostName
        info.vhost_name = vhostName
        info.iface = UnsafePointer(interface)
        if let foreignLoops { LWSContextFactory.runOnForeignLoop(&info, foreignLoops) }
        let created: (context: OpaquePointer, vhost: OpaquePointer)? =
            withOptionalCString(settings.certificates?.serverCertificateFile) { certificate in
                withOptionalCString(settings.certificates?.serverKeyFile) { key in
                    info.ssl_cert_filepath = certificate
                    info.ssl_private_key_filepath = key
                    guard let made = LWSContextFactory.makeContext(&info) else { return nil }
                    if let unixInterface {
                        // A second vhost on the same context and protocols, listening on
                        // the Unix socket (lws replaces a stale socket file).
                        var unixInfo = info
                        unixInfo.port = 0
                        unixInfo.options |= UInt64(LWS_SERVER_OPTION_UNIX_SOCK)
                        unixInfo.iface = UnsafePointer(unixInterface)
                        unixInfo.vhost_name = ServerTables.unixVhostName
                        listensOnUnixSocket = lws_create_vhost(made.context, &unixInfo) != nil
                    }
                    return made
                }
            }
        guard let (created, vhost) = created else { return nil }
        context = created
        self.vhost = vhost
        boundPort = Int(lws_get_vhost_listen_port(vhost))
        return created
    }

    func handleCallback(
        wsi: OpaquePointer?, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        guard let wsi else { return 0 }
        if reason == LWS_CALLBACK_WSI_DESTROY { EventLoopThread.forgetTimer(of: wsi) }
        switch reason {
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            if let refuseUntil, ContinuousClock.now < refuseUntil { return -1 }
            return 0
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi)
        case LWS_CALLBACK_HTTP:
            return answerPlainHTTP(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            established(wsi)
            return 0
        case LWS_CALLBACK_RAW_ADOPT:
            if let peer = pendingRawPeer {
                pendingRawPeer = nil
                attach(peer, to: wsi)
                return peer.adopted(wsi)
            }
            return 0
        default:
            break
        }
        guard let opaque = lws_get_opaque_user_data(wsi) else { return 0 }
        let object = Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue()
        if let connection = object as? ServerConnection {
            return handle(connection, wsi: wsi, reason: reason, input: input, length: length)
        }
        if let peer = object as? RawPeer {
            let result = peer.handle(wsi, reason: reason, input: input, length: length)
            if reason == LWS_CALLBACK_WSI_DESTROY { detach(wsi, peer) }
            return result
        }
        return 0
    }

    /// A socket's timer came (libev backend, outside any lws callback): handled as
    /// `LWS_CALLBACK_TIMER` would be; a -1 closes the socket now.
    func timerFired(_ key: OpaquePointer) {
        if handleCallback(wsi: key, reason: LWS_CALLBACK_TIMER, user: nil, input: nil, length: 0) != 0 {
            wss_close_now(key)
        }
    }

    func log(level: Int32, line: String) {
        settings.logger.log(level: LWSLogging.logLevel(forLWSLevel: level), "\(line)")
    }

    func willDestroyContext(_ context: OpaquePointer) {
        self.context = nil
        vhost = nil
    }
}
