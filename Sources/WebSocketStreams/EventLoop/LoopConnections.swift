import LibWebSocketsLoop
import CLibWebSockets
import Glibc
import Logging

/// The service-thread side of a ``WebSocketEventLoop``: creates the lws context (raw
/// sockets only: connecting, protocol, TLS and proxies are the connections' own), owns the
/// connections of the loop, and routes lws callbacks and log lines to them.
///
/// Only the loop's thread touches this object after creation (all its methods
/// are `EventLoopThreadDelegate` callbacks or are called from them), so its mutable state
/// needs no lock.
// @unchecked: confined to the loop's thread; see above.
final class LoopConnections: EventLoopThreadDelegate, @unchecked Sendable {
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    nonisolated(unsafe) static let protocols = LWSStatics.makeProtocolTable(
        name: "websocketstreams-client", receiveBufferSize: 0, sendLimit: 0)
    static let protocolName = "websocketstreams-client"
    /// The client context's vhost name (lws keeps it by pointer: one allocation per process).
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    nonisolated(unsafe) static let vhostName = LWSStatics.immortalCString("client-default")
    /// How much lws reads from a socket in one go (`pt_serv_buf_size`): large reads mean
    /// few passes, and one consumer wake-up per pass, on a busy connection.
    static let readSize = 256 * 1024

    private let loopLogger: Logger
    private var context: OpaquePointer?
    private var vhost: OpaquePointer?
    /// Strong references to the live connections, dropped at `LWS_CALLBACK_WSI_DESTROY`.
    private var connections: [ObjectIdentifier: ClientConnection] = [:]
    /// The connection whose callback is running, so lws log lines reach its logger.
    /// Unowned: set only for the duration of its callback, while `connections` holds it.
    private unowned(unsafe) var currentConnection: ClientConnection?
    private var whenAllClosed: (@Sendable () -> Void)?
    /// Consumers to resume once the current lws pass ends, with their messages.
    private var deliveries: [(consumer: InboundQueue.Consumer, message: WebSocketMessage)] = []

    /// Where connections encode frames before they go to the socket (or to TLS), and
    /// where TLS ciphertext and plaintext pass through: one set per loop, since one
    /// connection at a time runs on its thread, and nothing is left in them between calls.
    let writeScratch: UnsafeMutableRawBufferPointer
    let cipherScratch: UnsafeMutableRawBufferPointer
    let readScratch: UnsafeMutableRawBufferPointer

    init(logger: Logger) {
        loopLogger = logger
        writeScratch = .allocate(byteCount: 256 * 1024, alignment: 16)
        cipherScratch = .allocate(byteCount: 256 * 1024, alignment: 16)
        readScratch = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        writeScratch.deallocate()
        cipherScratch.deallocate()
        readScratch.deallocate()
    }

    // MARK: - EventLoopThreadDelegate

    func makeContext(contextUser: UnsafeMutableRawPointer, foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> OpaquePointer? {
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(Self.protocols)
        info.pt_serv_buf_size = UInt32(Self.readSize)
        info.user = contextUser
        info.gid = -1
        info.uid = -1
        // Handshake deadlines are enforced per connection (connectTimeout); keep lws's
        // own shorter defaults (5 s per address, 20 s overall) out of the way.
        info.timeout_secs = 600
        info.connect_timeout_secs = 600
        info.retry_and_idle_policy = UnsafePointer(LWSStatics.noValidityPings)
        let vhostName = Self.vhostName
        info.vhost_name = vhostName
        if let foreignLoops { LWSContextFactory.runOnForeignLoop(&info, foreignLoops) }
        // TLS is ours (OpenSSL memory BIOs): lws does no OpenSSL setup for this context.
        guard let (context, vhost) = LWSContextFactory.makeContext(&info, usesTLS: false) else { return nil }
        self.context = context
        self.vhost = vhost
        return context
    }

    func handleCallback(
        wsi: OpaquePointer?, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        guard let wsi, let event = RawSocket.Event(reason: reason, input: input, length: length) else { return 0 }
        let drop = dispatch(event, to: wsi)
        if reason == LWS_CALLBACK_WSI_DESTROY {
            EventLoopThread.forgetTimer(of: wsi)
            if let opaque = lws_get_opaque_user_data(wsi) {
                lws_set_opaque_user_data(wsi, nil)
                release(Unmanaged<ClientConnection>.fromOpaque(opaque).takeUnretainedValue())
            }
        }
        return drop ? -1 : 0
    }

    /// A socket's deadline came (libev backend, outside any lws callback): the same as
    /// `LWS_CALLBACK_TIMER`, except that a drop closes the socket here and now.
    func timerFired(_ key: OpaquePointer) {
        if dispatch(.timer, to: key) { wss_close_now(key) }
    }

    /// Hands `event` to the socket's connection; returns whether to drop the socket.
    private func dispatch(_ event: RawSocket.Event, to wsi: OpaquePointer) -> Bool {
        guard let opaque = lws_get_opaque_user_data(wsi) else { return false }
        let connection = Unmanaged<ClientConnection>.fromOpaque(opaque).takeUnretainedValue()
        currentConnection = connection
        defer { currentConnection = nil }
        #if DEBUG
        let sentBefore = connection.writeSide.bytesSent
        #endif
        let drop = connection.transport.handle(connection, event, socket: RawSocket(wsi: wsi), loop: self)
        #if DEBUG
        // The spin check (debug builds only): progress only if the callback wrote or ended
        // something; a writable or timer callback that does neither and comes again at once
        // is a busy loop.
        switch event {
        case .writable, .timer:
            if connection.writeSide.bytesSent != sentBefore || drop || connection.transport.hasEnded {
                passProgress = true
            }
        case .received(let bytes):
            if !bytes.isEmpty { passProgress = true }
        default:
            passProgress = true
        }
        #endif
        return drop
    }

    func log(level: Int32, line: String) {
        let logger = currentConnection?.logger ?? loopLogger
        let logLevel = LWSLogging.logLevel(forLWSLevel: level)
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

    /// Whether a callback made progress since ``takePassProgress()`` last looked.
    private var passProgress = false

    func takePassProgress() -> Bool {
        defer { passProgress = false }
        return passProgress
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

    /// Resumes `consumer` with `message` when the current pass ends (loop thread).
    func deliverAfterTurn(_ consumer: InboundQueue.Consumer, _ message: WebSocketMessage) {
        deliveries.append((consumer, message))
    }

    // MARK: - Connections

    /// Starts the handshake for `connection` (loop thread).
    func open(_ connection: ClientConnection) {
        guard context != nil, let vhost else {
            connection.transport.failBeforeConnect(connection, .connectionFailed("the event loop has been shut down"))
            return
        }
        connections[ObjectIdentifier(connection)] = connection
        // lws's log mask is process-global state: only ever changed on a loop thread.
        // The level claimed is remembered: a handler may report another level later.
        let level = connection.logger.logLevel
        connection.transport.opening.claimedLogLevel = level
        LWSLogging.claim(for: level)
        connection.transport.connect(connection, vhost: vhost, loop: self)
    }

    private func release(_ connection: ClientConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if let level = connection.transport.opening.claimedLogLevel {
            connection.transport.opening.claimedLogLevel = nil
            LWSLogging.releaseClaim(for: level)
        }
        if connections.isEmpty, let whenAllClosed {
            self.whenAllClosed = nil
            whenAllClosed()
        }
    }

    /// Forgets a connection that never got an lws socket.
    func forget(_ connection: ClientConnection) {
        release(connection)
    }

    /// How many connections the loop still holds (loop thread).
    var liveConnectionCount: Int { connections.count }

    /// Asks every connection to close with 1001 and calls `done` when none is left.
    func closeAll(then done: @escaping @Sendable () -> Void) {
        if connections.isEmpty {
            done()
            return
        }
        whenAllClosed = done
        for connection in connections.values {
            connection.requestClose(code: .goingAway)
        }
    }
}
