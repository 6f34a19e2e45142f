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
    private var context: OpaquePointer?
    private var vhost: OpaquePointer?
    private var connections: [ObjectIdentifier: AnyObject] = [:]
    private var pendingRawPeer: RawPeer?
    /// New TCP connections are dropped at accept until this instant.
    private var refuseUntil: ContinuousClock.Instant?
    /// Sockets taken from lws, waiting to be adopted back as raw sockets on the next pass.
    private var pendingAdoptions: [(peer: RawPeer, descriptor: Int32)] = []
    /// Handler connections by id, for the work their handlers post.
    private var handlerConnections: [Int: ServerConnection] = [:]
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

    // MARK: - Upgrade

    private func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        let path = header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        let query = queryParameters(wsi)
        if let handler = handler(forPath: path) {
            guard let decide = handler.upgrade else { return 0 }
            let request = TestServer.UpgradeRequest(
                path: path, query: query, headers: requestHeaders(wsi, extra: query["custom"], names: handler.headerNames),
                offeredSubprotocols: offeredSubprotocols(wsi))
            switch decide(request) {
            case .accept:
                return 0
            case .reject(let status, let headers, let body):
                recorder.rejected(path: path, status: status)
                return reject(wsi, status: status, body: body, retryAfter: nil, location: nil, headers: headers)
            }
        }
        let route = ServerRoute(path: path, query: query)
        if case .reject(let status, let body, let retryAfter, let location) = route {
            recorder.rejected(path: path, status: status)
            return reject(wsi, status: status, body: body, retryAfter: retryAfter, location: location)
        }
        guard route.isServedByRawTLSListener else { return 0 }
        if settings.certificates != nil {
            // lws holds the TLS state: raw routes over TLS are the raw TLS listener's.
            let body = "\(path) is served over TLS by the raw TLS listener (TestServer.rawTLSPort)"
            return reject(wsi, status: 501, body: body, retryAfter: nil, location: nil)
        }
        guard route.isRaw else {
            let body = "\(path) is only served by a TLS test server, on its raw TLS listener"
            return reject(wsi, status: 501, body: body, retryAfter: nil, location: nil)
        }
        return takeOver(wsi, route: route, path: path, query: query)
    }

    /// Writes a complete HTTP error response and tells lws the request is handled.
    private func reject(
        _ wsi: OpaquePointer, status: Int, body: String, retryAfter: String?, location: String?, headers: [String: String] = [:]
    ) -> Int32 {
        let response = HTTPResponses.rejection(status: status, body: body, retryAfter: retryAfter, location: location, headers: headers)
        var bytes = [UInt8](repeating: 0, count: ServerConnection.headroom) + response
        _ = bytes.withUnsafeMutableBufferPointer { buffer in
            wss_write(wsi, buffer.baseAddress! + ServerConnection.headroom, response.count, LWS_WRITE_HTTP.rawValue)
        }
        return 1
    }

    private func answerPlainHTTP(_ wsi: OpaquePointer) -> Int32 {
        _ = reject(wsi, status: 426, body: "this is a WebSocket test server; connect with ws://", retryAfter: nil, location: nil)
        return -1
    }

    private func established(_ wsi: OpaquePointer) {
        let path = header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        let query = queryParameters(wsi)
        let handler = handler(forPath: path)
        let route = handler == nil ? ServerRoute(path: path, query: query) : .handler
        let headers = requestHeaders(wsi, extra: query["custom"], names: handler?.headerNames ?? [])
        let offered = header(wsi, WSI_TOKEN_PROTOCOL)
        let selected = offered == nil ? nil : lws_get_protocol(wsi).map { String(cString: $0.pointee.name) }
        let compressed = settings.compression && (headers["sec-websocket-extensions"]?.contains("permessage-deflate") ?? false)
        let resumed = lws_get_ssl(wsi).map { SSL_session_reused($0) == 1 } ?? false
        var peerText = [CChar](repeating: 0, count: 64)
        let peerAddress = lws_get_peer_simple(wsi, &peerText, peerText.count).map { String(cString: $0) }
        let id = recorder.opened { id in
            var record = TestServer.ConnectionRecord(
                id: id, path: path, query: query, headers: headers, subprotocol: selected,
                compressed: compressed, openedAt: .now)
            record.tlsResumed = resumed
            record.peerAddress = peerAddress
            return record
        }
        if compressed {
            // lws's 1 KiB deflate buffers split larger messages over many writable passes, and
            // a small inflate buffer makes lws drain (see `receiveBufferSize`).
            _ = lws_set_extension_option(wsi, "permessage-deflate", "tx_buf_size", "16")
            _ = lws_set_extension_option(wsi, "permessage-deflate", "rx_buf_size", "20")
        }
        let connection = ServerConnection(
            id: id, route: route, recorder: recorder, compressed: compressed, recordTexts: settings.recordTexts)
        connection.wsi = wsi
        attach(connection, to: wsi)
        if let handler, let runner, let thread {
            let link = HandlerLink(id: id, loop: self, thread: thread)
            connection.handler = link
            handlerConnections[id] = connection
            let request = TestServer.UpgradeRequest(
                path: path, query: query, headers: headers, offeredSubprotocols: offeredSubprotocols(wsi))
            runner.start(handler.body, on: TestServer.Connection(link: link, request: request, subprotocol: selected))
            return
        }
        let seen = HandshakeSeen(path: path, subprotocol: selected, compressed: compressed, headers: headers)
        connection.established(wsi, headersJSON: seen.json)
    }

    /// The handler serving `path`, if any.
    private func handler(forPath path: String) -> TestServer.Handler? {
        settings.fallbackHandler ?? settings.handlers[path]
    }

    /// The open handler connection `id` and its wsi.
    func handlerConnection(_ id: Int) -> (ServerConnection, OpaquePointer)? {
        guard let connection = handlerConnections[id], let wsi = connection.wsi else { return nil }
        return (connection, wsi)
    }

    /// The subprotocols the client offered, in its order.
    private func offeredSubprotocols(_ wsi: OpaquePointer) -> [String] {
        (header(wsi, WSI_TOKEN_PROTOCOL) ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    private func handle(
        _ connection: ServerConnection, wsi: OpaquePointer, reason: lws_callback_reasons,
        input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_RECEIVE:
            return connection.receive(wsi, input: input, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            return connection.writeable(wsi, pushBuffer: pushBuffer, pushCapacity: Self.pushCapacity)
        case LWS_CALLBACK_TIMER:
            return connection.timerFired(wsi)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            var code: WebSocketCloseCode?
            var reason = ""
            if let input, length >= 2 {
                let bytes = input.assumingMemoryBound(to: UInt8.self)
                code = WebSocketCloseCode(rawValue: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
                reason = String(decoding: UnsafeBufferPointer(start: bytes + 2, count: length - 2), as: UTF8.self)
            } else {
                code = .noStatusReceived
            }
            recorder.change(connection.id) { record in
                record.closeCodeReceived = code
                record.closeReasonReceived = reason
                record.closeReceivedAt = .now
            }
            connection.handler?.clientClosed(code: code, reason: reason)
        case LWS_CALLBACK_RECEIVE_PONG:
            recorder.change(connection.id) { $0.pongsReceived += 1 }
        case LWS_CALLBACK_CLOSED:
            recorder.change(connection.id) { $0.closedAt = .now }
        case LWS_CALLBACK_WSI_DESTROY:
            recorder.markClosed(connection.id)
            connection.wsi = nil
            detach(wsi, connection)
            handlerConnections[connection.id] = nil
            connection.handler?.ended()
        default:
            break
        }
        return 0
    }

    // MARK: - Raw takeover

    /// Takes the socket away from lws before it answers the upgrade, for routes that must
    /// misbehave below the WebSocket layer (a handshake that is late or never comes).
    ///
    /// lws 4.1 offers no way to defer or replace its upgrade answer, and closing its wsi
    /// would shut the socket down. So the socket is duplicated, lws's descriptor number is
    /// pointed at a throwaway socket (which lws then closes), and the duplicate is adopted
    /// back as a raw socket this server drives byte by byte.
    private func takeOver(_ wsi: OpaquePointer, route: ServerRoute, path: String, query: [String: String]) -> Int32 {
        let descriptor = lws_get_socket_fd(wsi)
        let key = header(wsi, WSI_TOKEN_KEY) ?? ""
        let stolen = dup(descriptor)
        let placeholder = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard stolen >= 0, placeholder >= 0, dup2(placeholder, descriptor) >= 0 else {
            if stolen >= 0 { close(stolen) }
            if placeholder >= 0 { close(placeholder) }
            return -1
        }
        close(placeholder)
        let id = recorder.opened { id in
            TestServer.ConnectionRecord(
                id: id, path: path, query: query, headers: [:], subprotocol: nil, compressed: false, openedAt: .now)
        }
        let peer = RawPeer(id: id, route: route, key: key, recorder: recorder)
        // Adopt on the next loop pass, after lws has let go of its wsi.
        pendingAdoptions.append((peer, stolen))
        thread?.post(LoopClosure { [self] in adoptPending() })
        return -1
    }

    private func adoptPending() {
        let adoptions = pendingAdoptions
        pendingAdoptions = []
        for (peer, descriptor) in adoptions {
            guard let vhost else {
                close(descriptor)
                continue
            }
            pendingRawPeer = peer
            var descriptorUnion = lws_sock_file_fd_type()
            descriptorUnion.sockfd = descriptor
            let adopted = lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_SOCKET, descriptorUnion, Self.rawProtocolName, nil)
            pendingRawPeer = nil
            if adopted == nil { close(descriptor) }
        }
    }

    // MARK: - Fault controls

    /// Drops every WebSocket connection without a close frame (lws closes them at its next
    /// pass). Returns the ids of those it dropped.
    func disconnectAll() -> Set<Int> {
        var dropped = Set<Int>()
        var sockets: [OpaquePointer] = []
        for case let connection as ServerConnection in connections.values {
            guard let wsi = connection.wsi else { continue }
            connection.discardInputAtDrop(wsi)
            sockets.append(wsi)
            dropped.insert(connection.id)
        }
        // Posted work runs outside any lws callback: closing now is safe, and each close
        // removes its connection from `connections` (hence the list first).
        for wsi in sockets { wss_close_now(wsi) }
        return dropped
    }

    /// Whether any of the connections `ids` still has its socket (lws has not freed it yet).
    func holdsAny(of ids: Set<Int>) -> Bool {
        connections.values.contains { ($0 as? ServerConnection).map { ids.contains($0.id) } ?? false }
    }

    /// Closes every WebSocket connection with a close frame carrying `code`. Returns how many.
    func goAwayAll(code: UInt32) -> Int {
        var count = 0
        for case let connection as ServerConnection in connections.values {
            guard let wsi = connection.wsi else { continue }
            connection.goAway(wsi, code: code)
            count += 1
        }
        return count
    }

    /// Drops new TCP connections as soon as they are accepted, for `duration`.
    func refuseConnections(for duration: Duration) {
        refuseUntil = .now + duration
    }

    // MARK: - Bookkeeping

    private func attach(_ object: AnyObject, to wsi: OpaquePointer) {
        connections[ObjectIdentifier(object)] = object
        lws_set_opaque_user_data(wsi, Unmanaged.passUnretained(object).toOpaque())
    }

    private func detach(_ wsi: OpaquePointer, _ object: AnyObject) {
        lws_set_opaque_user_data(wsi, nil)
        connections[ObjectIdentifier(object)] = nil
    }

    // MARK: - Reading the request

    func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private func queryParameters(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        var index: Int32 = 0
        while lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
            let fragment = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if let equals = fragment.firstIndex(of: "=") {
                result[String(fragment[..<equals])] = String(fragment[fragment.index(after: equals)...])
            } else if !fragment.isEmpty {
                result[fragment] = ""
            }
            index += 1
        }
        return result
    }

    /// Every standard request header lws parsed, plus the custom headers named in
    /// `?custom=a,b` and a few common ones (lws cannot list unknown headers).
    private func requestHeaders(_ wsi: OpaquePointer, extra: String?, names: [String] = []) -> [String: String] {
        var headers: [String: String] = [:]
        var token: UInt32 = 0
        while token < WSI_TOKEN_COUNT.rawValue {
            let index = lws_token_indexes(rawValue: token)
            if let namePointer = lws_token_to_string(index),
               let value = header(wsi, index) {
                var name = String(cString: namePointer)
                if name.hasSuffix(":") { name.removeLast() }
                // Skip lws's pseudo-headers for the request line ("get ", "http/1.1 ", "uri-args").
                if !name.isEmpty, !name.contains(" "), name != "uri-args" { headers[name] = value }
            }
            token += 1
        }
        var custom = [
            "x-api-key", "x-request-id", "x-test", "x-client", "x-trace-id", "traceparent", "tracestate",
            "x-auth-token", "x-token", "x-session-id", "x-client-id", "x-correlation-id", "x-forwarded-for",
            "x-app-version", "x-device-id", "baggage",
        ] + names
        if let extra { custom += extra.split(separator: ",").map { $0.lowercased() } }
        for name in custom {
            var buffer = [CChar](repeating: 0, count: 4096)
            let length = wss_custom_header(wsi, name + ":", &buffer, Int32(buffer.count))
            if length >= 0 {
                headers[name] = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
        }
        return headers
    }
}
