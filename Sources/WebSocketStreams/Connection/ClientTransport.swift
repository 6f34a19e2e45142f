import DequeModule
import FoundationEssentials
import Logging
import SynchronizationSupport

/// The service-thread half of a client connection: it drives one raw socket through the
/// opening steps (TCP, an optional proxy tunnel, TLS, the HTTP upgrade) and then the
/// WebSocket protocol, feeding received bytes to a ``MessageAssembler`` and writing what
/// a ``FrameWriter`` encodes. Events go to the shared ``ConnectionStateMachine``.
///
/// Everything here runs on the loop's service thread (lws callbacks and posted work),
/// so its state needs no lock; the state shared with user tasks lives in
/// ``ClientConnection/machine``. The C world (lws, OpenSSL, zlib) is reached only through
/// the types in `Native/`.
// @unchecked: confined to the loop's service thread; see above.
final class ClientTransport: @unchecked Sendable {
    /// Where the connection is on its way to open, and what each step keeps.
    enum Phase {
        /// Not started yet.
        case idle
        /// TCP connect under way.
        case connecting
        /// `CONNECT` sent to the proxy; its answer is being read.
        case tunnelling(HTTPResponseParser)
        /// The SOCKS5 proxy's opening exchange is under way.
        case negotiatingSOCKS(SOCKS5Handshake)
        /// TLS handshake under way.
        case securing
        /// The upgrade request went out; the server's answer is being read.
        case upgrading(HTTPResponseParser)
        /// The server answered with another status; its body is being collected.
        case rejected(HTTPResponseHead, HTTPBodyCollector)
        /// The WebSocket protocol runs.
        case open
        /// The socket is gone.
        case ended
    }

    /// How far the closing handshake has got.
    struct Closing {
        /// Our close frame is on the wire (fully handed to the socket).
        var sent = false
        /// The peer's close frame arrived.
        var received = false
        /// This side failed the connection (a broken rule, a failed write).
        var failing = false
        /// When to drop the socket if the peer has not ended TCP by then.
        var deadline: ContinuousClock.Instant?
        /// How long lingering may go on while the peer keeps sending (the rest of a long
        /// message it was writing when the close came).
        var lingerLimit: ContinuousClock.Instant?
    }

    /// The configuration, shared with the connection.
    let sharedConfiguration: SharedConfiguration
    var configuration: WebSocketConfiguration { sharedConfiguration.value }
    let url: WebSocketURL
    let target: ConnectTarget
    let handshakeDeadline: ContinuousClock.Instant
    /// The upgrade request's `Sec-WebSocket-Key`, that the server's answer must match.
    let handshakeKey: String
    /// The upgrade request as written; emptied once it is handed to the socket, so an open
    /// connection does not carry it.
    var upgradeRequestBytes: [UInt8]
    /// Removes this connection's credentials from log lines (nil when it has none or
    /// ``WebSocketConfiguration/redactsSecretsInLogs`` is off).
    let redactor: SecretRedactor?

    var socket: RawSocket?
    /// The lws log level this connection claimed while the loop holds it (service thread).
    var claimedLogLevel: Logger.Level?
    var phase: Phase = .idle
    var tls: TLSSession?
    var assembler: MessageAssembler?
    var writer = FrameWriter()
    var pendingOutput = PendingOutput()
    var closing = Closing()
    var keepalive: Keepalive?
    var readingPaused = false
    /// A `RAW_WRITEABLE` callback was asked for and has not come yet.
    var writableRequested = false
    /// ``ClientConnection/runOnServiceThread()`` is running (a wake-up meanwhile is posted).
    var isServicing = false
    /// Direct writes by tasks may have been allowed (``closeDirectWrites(_:)`` must run
    /// before the socket closes).
    var directWritesOpened = false
    /// Why the connection is ending without a close handshake, once known.
    var abnormalEnd: WebSocketError?
    /// Bytes the socket has taken so far (wrapping): the loop's spin check reads it.
    var bytesSentToSocket = 0
    /// Bytes handed to the socket's outgoing stream so far (sent or waiting in
    /// ``pendingOutput``), by the loop and, once taken from them, by direct writes: the
    /// offsets ``DeliveryLedger`` compares with the peer's acknowledgements.
    var streamBytes = 0
    /// Where this side's close frame ends in the outgoing stream, once encoded.
    var closeFrameStreamEnd: Int?
    /// The socket must be dropped at the next callback (set outside callbacks, where
    /// returning -1 is not possible).
    var dropRequested = false
    /// The error a dropped handshake reports, when it is not the generic one.
    var handshakeError: WebSocketError?
    /// A broken rule held until the consumer has finished the messages before it, and
    /// the latest time to apply it anyway.
    var deferredFailure: (failure: ProtocolFailure, deadline: ContinuousClock.Instant)?
    /// Plaintext read but not fed to the assembler yet: reading paused in the middle of it.
    var heldInput: [UInt8] = []
    /// Messages of the current read not yet handed to the state machine (reused).
    var incoming: [WebSocketMessage] = []
    /// Events of the current read, reused from read to read.
    var events: [InboundEvent] = []
    /// Consumers to resume with messages of the current read, reused from read to read.
    var spareDeliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
    /// This side's close frame, once queued (reported when it is on the wire).
    var closeFrameQueued: CloseFrame?
    /// Message bytes already added to ``ClientConnection/bytesWritten``.
    var reportedBytesWritten = 0
    /// Storage for the next batch taken from the state machine.
    var spareBatch = ConnectionStateMachine.WriteBatch()
    /// What the current flush owes senders, the observer and the metrics once it lets go
    /// of the write side.
    var effects = WriteSideEffects()

    /// How long a close may take (queued messages, the close handshake) before the socket is dropped.
    static let closeTimeout: Duration = .seconds(10)
    /// How long the client waits for the server to end TCP after the close handshake
    /// (RFC 6455 7.1.1: the server ends it first), or after failing the connection.
    static let lingerAfterClose: Duration = .seconds(1)
    /// How long a failure waits for the consumer to finish the messages before it.
    static let deferredFailureGrace: Duration = .seconds(2)
    /// How long a cancelled attempt waits for the server's answer to an upgrade request
    /// already sent, so an upgrade that completes meanwhile can be closed properly.
    static let abandonGrace: Duration = .seconds(1)

    init(configuration sharedConfiguration: SharedConfiguration, url: WebSocketURL, target: ConnectTarget, handshakeDeadline: ContinuousClock.Instant) {
        self.sharedConfiguration = sharedConfiguration
        let configuration = sharedConfiguration.value
        self.url = url
        self.target = target
        self.handshakeDeadline = handshakeDeadline
        var headers = configuration.headers
        if let authorization = url.basicAuthorization, !headers.keys.contains(where: { $0.lowercased() == "authorization" }) {
            headers["Authorization"] = authorization
        }
        let request = HandshakeRequest(
            url: url, headers: headers.sorted(by: { $0.key < $1.key }).map { (name: $0.key, value: $0.value) },
            subprotocols: configuration.subprotocols, origin: configuration.origin,
            extensionOffer: configuration.compression ? DeflateParameters.clientOffer : nil)
        handshakeKey = request.key
        upgradeRequestBytes = request.bytes
        let redactor = SecretRedactor(url: url, headers: headers)
        self.redactor = configuration.redactsSecretsInLogs && !redactor.secrets.isEmpty ? redactor : nil
    }

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    var hasEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// Whether the proxy's own exchange is under way (its bytes are plaintext, never TLS).
    var isNegotiatingWithProxy: Bool {
        switch phase {
        case .tunnelling, .negotiatingSOCKS: true
        default: false
        }
    }

    // MARK: - Callbacks

    /// Handles what the socket reports; returns whether to drop it now.
    func handle(_ connection: ClientConnection, _ event: RawSocket.Event, socket reporting: RawSocket, loop: ClientLoop) -> Bool {
        if socket == nil { socket = reporting }
        switch event {
        case .received(let bytes):
            received(connection, bytes, loop: loop)
        case .writable:
            writableRequested = false
            if case .connecting = phase {
                connectFinished(connection, loop: loop)
            } else {
                flush(connection, loop: loop)
            }
        case .closed:
            closeDirectWrites(connection)
            socketClosed(connection)
        case .timer:
            timerFired(connection, loop: loop)
        case .destroyed:
            closeDirectWrites(connection)
            socketClosed(connection)
            socket = nil
            return false
        }
        if dropRequested { closeDirectWrites(connection) }  // lws closes the socket when this returns
        return dropRequested
    }

    // MARK: - Connecting

    /// Starts the connect (service thread, from ``ClientLoop/open(_:)``): this side opens
    /// the socket and starts connecting it (``SocketConnector``), then lws adopts it.
    func connect(_ connection: ClientConnection, vhost: OpaquePointer, loop: ClientLoop) {
        if connection.machine.withLock({ $0.connectCancelled }) {
            phase = .ended
            loop.forget(connection)
            return
        }
        phase = .connecting
        let started: SocketConnector.Started
        do {
            started = try SocketConnector.start(target.endpoint)
        } catch {
            end(connection, connectError: proxied(error))
            loop.forget(connection)
            return
        }
        guard let adopted = RawSocket.adopt(
            descriptor: started.descriptor, vhost: vhost, protocolName: ClientLoop.protocolName,
            opaque: Unmanaged.passUnretained(connection).toOpaque())
        else {
            // lws closed the descriptor; no WSI_DESTROY comes for a wsi that was never returned.
            end(connection, connectError: .connectionFailed("libwebsockets could not take the socket for \(target.description)"))
            loop.forget(connection)
            return
        }
        socket = adopted
        armTimer()
        if started.inProgress {
            // Writable once the connect finished, either way; reading waits until it succeeded.
            adopted.setReading(false)
            writableRequested = true
            adopted.requestWritable()
        } else {
            connected(connection, loop: loop)
        }
    }

    /// A connect that was in progress has finished (the socket became writable).
    func connectFinished(_ connection: ClientConnection, loop: ClientLoop) {
        guard let socket else { return }
        if let error = connectFailure() {
            end(connection, connectError: error)
            dropRequested = true
            return
        }
        socket.setReading(true)
        connected(connection, loop: loop)
    }

    /// Why a connect in progress failed, from the socket's own error (which only a read
    /// would have cleared); `nil` when it has none.
    private func connectFailure() -> WebSocketError? {
        socket?.pendingError().map { proxied(.connectionFailed("\($0) (\(target.description))")) }
    }

    /// `error` for a failed connect, saying that the address was the proxy's.
    private func proxied(_ error: WebSocketError) -> WebSocketError {
        guard target.proxy != nil, error.code == .connectionFailed, let reason = error.reason else { return error }
        return .connectionFailed("could not reach the proxy: \(reason)")
    }

    /// TCP is up: tunnel, secure, or upgrade.
    private func connected(_ connection: ClientConnection, loop: ClientLoop) {
        guard case .connecting = phase else { return }
        if let proxy = target.proxy {
            switch proxy.kind {
            case .httpConnect:
                phase = .tunnelling(HTTPResponseParser())
                send(proxy.connectRequest(to: url), connection: connection, loop: loop)
            case .socks5:
                let handshake = SOCKS5Handshake(
                    destination: target.socksDestination ?? .hostName(url.host), port: url.port,
                    credentials: proxy.credentials, proxyName: proxy.summary)
                phase = .negotiatingSOCKS(handshake)
                send(handshake.greeting, connection: connection, loop: loop)
            }
        } else {
            startTLSOrUpgrade(connection, loop: loop)
        }
    }

    func startTLSOrUpgrade(_ connection: ClientConnection, loop: ClientLoop) {
        guard let tlsContext = target.tlsContext else {
            sendUpgradeRequest(connection, loop: loop)
            return
        }
        do {
            tls = try TLSSession(
                context: tlsContext, host: url.host, verifyHost: !configuration.tls.allowUntrustedCertificates,
                resuming: tlsContext.ticket(forServer: tlsServerKey))
        } catch {
            failHandshake(connection, error)
            return
        }
        phase = .securing
        continueTLSHandshake(connection, loop: loop)
    }

    /// The key session tickets are kept under.
    var tlsServerKey: String { url.unixSocketPath.map { "unix:\($0)" } ?? "\(url.host):\(url.port)" }

    func sendUpgradeRequest(_ connection: ClientConnection, loop: ClientLoop) {
        phase = .upgrading(HTTPResponseParser())
        connection.logger.trace("sending the upgrade request for \(redactor?.redact(url.description) ?? url.description)")
        reportHandshakeRequest()
        send(upgradeRequestBytes, connection: connection, loop: loop)
        upgradeRequestBytes = []
    }

    /// Fails the handshake with `error` and drops the socket.
    func failHandshake(_ connection: ClientConnection, _ error: WebSocketError) {
        handshakeError = error
        end(connection, connectError: error)
        requestDrop()
    }

    /// The handshake succeeded: the protocol runs from here.
    func opened(_ connection: ClientConnection, negotiated: NegotiatedHandshake, loop: ClientLoop) {
        var inflater: MessageInflater?
        if let extensions = negotiated.extensions {
            do {
                let parameters = try DeflateParameters(negotiating: extensions)
                inflater = MessageInflater(parameters: parameters)
                if MessageDeflater.canCompress(with: parameters) {
                    writer = FrameWriter(deflater: try? MessageDeflater(parameters: parameters))
                }
            } catch {
                failHandshake(connection, .connectionFailed("the server's permessage-deflate answer is invalid: \(error)"))
                return
            }
        }
        phase = .open
        if let socket {
            let tracksDelivery = RawSocket.acknowledgedByteCount(of: socket.descriptor) != nil
            connection.directWrites.withLock { $0.tracksDelivery = tracksDelivery }
        }
        connection.recordOpened()  // metrics hook
        if let tls, let tlsContext = target.tlsContext {
            // TLS 1.3 tickets arrive after the handshake, before the 101 has been read.
            if let ticket = tls.ticket() { tlsContext.store(ticket, forServer: tlsServerKey) }
        }
        assembler = MessageAssembler(maxMessageSize: configuration.maxMessageSize, inflater: inflater)
        keepalive = Keepalive(interval: configuration.pingInterval, pongTimeout: configuration.pongTimeout, now: .now)
        let (waiter, abandoned, error) = connection.machine.withLock {
            $0.established(subprotocol: negotiated.subprotocol, extensions: negotiated.extensions,
                           responseHeaders: negotiated.headers, tlsSessionResumed: tls?.isResumed ?? false)
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume() }
        armTimer()
        // `connect` was cancelled (or the loop is closing) as the handshake finished: close
        // the orphan properly.
        if abandoned { connection.wake() }
    }

    // MARK: - Service requests

    /// Carries out what user tasks asked for (service thread, from posted work).
    func service(_ connection: ClientConnection, requests: ConnectionStateMachine.ServiceRequests, loop: ClientLoop) {
        guard let socket, !hasEnded, !dropRequested else { return }
        if requests.contains(.abort), !isOpen {
            // Before the upgrade request went out, drop the attempt at once. After, the
            // server may already have upgraded: give its answer a moment, so a 101 is
            // closed properly with 1001 (see `opened`) instead of dropped.
            if case .upgrading = phase {
                let grace = min(Self.abandonGrace, max(.milliseconds(1), handshakeDeadline - .now))
                socket.setTimer(grace)
            } else {
                handshakeError = .connectionFailed("closed before the handshake finished")
                requestDrop()
            }
            return
        }
        if requests.contains(.resumeReading), readingPaused {
            resumeReading(connection, loop: loop)
        }
        if requests.contains(.write), isOpen {
            if closing.deadline == nil, connection.machine.withLock({ $0.isClosingLocally }) {
                closing.deadline = .now + Self.closeTimeout
                armTimer()
            }
            flush(connection, loop: loop)
        }
        if requests.contains(.applyDeferredFailure) {
            applyDeferredFailure(connection, loop: loop)
        }
    }

    // MARK: - The end

    /// The socket closed (the peer ended TCP, an error, or this side dropped it).
    private func socketClosed(_ connection: ClientConnection) {
        if case .connecting = phase {
            // Without the socket's reason, `end` reports "could not connect to ...".
            end(connection, connectError: connectFailure())
            return
        }
        if case .rejected(let head, var body) = phase {
            body.connectionClosed()
            end(connection, connectError: rejection(head, body: body))
            return
        }
        if isOpen, abnormalEnd == nil { noteAbnormalEnd(reasonForLostConnection()) }
        end(connection, connectError: nil)
    }

    /// Why an open connection's socket closed when no close frame explained it: a reset,
    /// a TLS stream cut inside a record, or the server simply closing TCP. All are
    /// ``WebSocketError/connectionFailed(_:)``: the connection was lost, and may be retried.
    private func reasonForLostConnection() -> WebSocketError {
        if let failure = socket?.pendingError() {
            return .connectionFailed("\(failure) (\(target.description)) without a close frame")
        }
        // While reading is paused, ciphertext waits in TLS on purpose; only an unpaused
        // connection's leftovers are a record cut short.
        if let tls, !readingPaused, tls.holdsUnfinishedInput {
            // A connection failure, not a TLS one: the session was fine, the stream was cut
            // (and ReconnectingWebSocket retries it, as any dropped connection).
            return .connectionFailed("the connection ended inside a TLS record: the stream from \(url.hostHeader) was truncated")
        }
        if tls != nil {
            return .connectionFailed(
                "the server closed the connection without a close frame or a TLS close_notify (\(url.hostHeader))")
        }
        return .connectionFailed("the server closed the connection without a close frame (\(target.description))")
    }

    /// Records why the connection is ending without a close handshake (the first reason
    /// wins); it becomes ``WebSocket/error`` unless a close frame came or was sent first.
    func noteAbnormalEnd(_ error: WebSocketError) {
        if abnormalEnd == nil { abnormalEnd = error }
    }

    /// Ends the connection on this side: resumes or fails everything still waiting.
    func end(_ connection: ClientConnection, connectError: WebSocketError?) {
        if hasEnded { return }
        closeDirectWrites(connection)
        let wasOpen = isOpen
        let error = connectError ?? (wasOpen ? nil : handshakeError ?? defaultConnectError)
        phase = .ended
        assembler = nil
        let delivery = wasOpen ? settleDelivery(connection) : Delivery()
        let unwritten = delivery.unacknowledged + writer.unwrittenMessages
        writer = FrameWriter()
        let finale = connection.machine.withLock { machine in
            if let error, !wasOpen { return machine.connectFailed(error) }
            return machine.transportClosed(
                unwritten: unwritten, abnormalEnd: abnormalEnd, closeFrameAcknowledged: delivery.closeFrameAcknowledged)
        }
        connection.recordEnded(wasOpen: wasOpen)  // metrics hook, before the waiters resume
        finale?.run()
    }

    /// What the peer's TCP acknowledged of what was written, as the connection ends.
    struct Delivery {
        /// Messages written whose bytes were not all acknowledged, oldest first.
        var unacknowledged: [WebSocketMessage] = []
        /// Whether this side's close frame (if it wrote one) was acknowledged.
        var closeFrameAcknowledged = true
    }

    /// Asks the socket how much of the stream the peer acknowledged (once, as the connection
    /// ends: direct writes are closed by then) and settles the ledger with it. Where the
    /// socket cannot tell (a Unix socket, or a descriptor already gone), every written
    /// message counts as delivered, as TCP's own success would have it.
    private func settleDelivery(_ connection: ClientConnection) -> Delivery {
        let acknowledged = socket.flatMap { RawSocket.acknowledgedByteCount(of: $0.descriptor) }
        return connection.directWrites.withLock { direct in
            defer { direct.ledger.removeAll() }
            guard let acknowledged else { return Delivery() }
            return Delivery(
                unacknowledged: direct.tracksDelivery ? direct.ledger.unacknowledged(acknowledged: acknowledged) : [],
                closeFrameAcknowledged: closeFrameStreamEnd.map { $0 <= acknowledged } ?? true)
        }
    }

    /// What a handshake that ended without a clearer reason reports.
    private var defaultConnectError: WebSocketError {
        switch phase {
        case .idle, .connecting: .connectionFailed("could not connect to \(target.description)")
        case .tunnelling: .connectionFailed("the proxy closed the connection before answering CONNECT")
        case .negotiatingSOCKS: .connectionFailed("the SOCKS5 proxy closed the connection before the tunnel opened")
        case .securing: .tlsFailure("the connection closed during the TLS handshake with \(url.hostHeader)")
        case .upgrading where tls == nil:
            .connectionFailed(
                "the connection closed during the opening handshake (\(url.hostHeader)); if the server speaks TLS, use wss://")
        default: .connectionFailed("the connection closed during the opening handshake (\(url.hostHeader))")
        }
    }

    /// Fails a connection that never reached lws (loop gone).
    func failBeforeConnect(_ connection: ClientConnection, _ error: WebSocketError) {
        end(connection, connectError: error)
    }

    /// Drops the socket at the next callback (timer set to fire at once when outside one).
    func requestDrop() {
        dropRequested = true
        socket?.setTimer(.microseconds(1))
    }
}

/// Where a connection's socket goes and what runs over it before the WebSocket
/// handshake: the numeric address and port to connect to (the proxy's, with a proxy),
/// the proxy to tunnel through, and the TLS settings (prepared off the loop).
struct ConnectTarget: Sendable, CustomStringConvertible {
    var endpoint: SocketConnector.Endpoint
    var proxy: ProxyAddress?
    /// What a SOCKS5 proxy is asked to connect to: the server's address resolved here, or
    /// its name (`socks5h`).
    var socksDestination: SOCKS5Handshake.Destination?
    var tlsContext: TLSClientContext?

    var description: String {
        guard let proxy else { return endpoint.description }
        return proxy.kind == .httpConnect ? "proxy \(endpoint)" : "SOCKS5 proxy \(endpoint)"
    }
}
