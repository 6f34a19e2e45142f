import LibWebSocketsLoop
import SynchronizationSupport
import Logging
import WebSocketCore

/// The loop's half of a client connection: a shell around one raw socket that does the
/// I/O and decides nothing.
///
/// It drives the socket through the opening steps (``OpeningHandshake``: TCP, a proxy
/// tunnel, TLS, the HTTP upgrade), then reads frames (``ReadSide``) and writes them
/// (``WriteSide``). Every event goes to the ``ConnectionStateMachine``, and the transport
/// carries out what the machine answers: frames to write, reading to pause or resume, a
/// deadline to arm, the socket to drop.
///
/// Everything here runs on the loop's thread (lws callbacks and posted work), so its
/// state needs no lock; debug builds check that at each entry. The state shared with user
/// tasks lives in ``ClientConnection/machine`` and ``ClientConnection/writeSide``.
// @unchecked: confined to the loop's thread, checked in debug builds (`assertOnLoop`).
final class ClientTransport: @unchecked Sendable {
    /// The configuration, shared with the connection.
    let sharedConfiguration: SharedConfiguration
    var configuration: WebSocketConfiguration { sharedConfiguration.value }
    let url: WebSocketURL
    let target: ConnectTarget
    var socket: RawSocket?
    var tls: TLSSession?
    /// The opening steps and what they keep.
    var opening: OpeningHandshake
    /// What reading keeps from one read to the next.
    var reader = ReadSide()
    /// A `RAW_WRITEABLE` callback was asked for and has not come yet.
    var writableRequested = false
    /// ``ClientConnection/runOnLoop()`` is running (a wake-up meanwhile is posted).
    var isServicing = false
    /// The socket must be dropped at the next callback (set outside callbacks, where
    /// returning -1 is not possible).
    var dropRequested = false
    /// Why the connection is ending without a close handshake, once known.
    var abnormalEnd: WebSocketError?

    init(configuration sharedConfiguration: SharedConfiguration, url: WebSocketURL, target: ConnectTarget, clock: ConnectClock) {
        self.sharedConfiguration = sharedConfiguration
        self.url = url
        self.target = target
        opening = OpeningHandshake(url: url, configuration: sharedConfiguration.value, clock: clock)
    }

    /// Removes this connection's credentials from log lines.
    var redactor: SecretRedactor? { opening.redactor }

    var isOpen: Bool {
        if case .open = opening.step { return true }
        return false
    }

    var hasEnded: Bool {
        if case .ended = opening.step { return true }
        return false
    }

    /// Whether the proxy's own exchange is under way (its bytes are plaintext, never TLS).
    var isNegotiatingWithProxy: Bool {
        switch opening.step {
        case .tunnelling, .negotiatingSOCKS: true
        default: false
        }
    }

    /// Debug builds: the caller is on the loop's thread.
    @inline(__always)
    func assertOnLoop(_ connection: ClientConnection) {
        assert(connection.loopThread.isCurrent, "a connection's transport was used off its event loop's thread")
    }

    // MARK: - Callbacks

    /// Handles what the socket reports; returns whether to drop it now.
    func handle(_ connection: ClientConnection, _ event: RawSocket.Event, socket reporting: RawSocket, loop: LoopConnections) -> Bool {
        assertOnLoop(connection)
        if socket == nil { socket = reporting }
        switch event {
        case .received(let bytes):
            received(connection, bytes, loop: loop)
        case .writable:
            writableRequested = false
            if case .connecting = opening.step {
                connectFinished(connection, loop: loop)
            } else {
                flush(connection, loop: loop)
            }
        case .closed:
            connection.writeSide.closeDirectWrites()
            socketClosed(connection)
        case .timer:
            timerFired(connection, loop: loop)
        case .destroyed:
            connection.writeSide.closeDirectWrites()
            socketClosed(connection)
            socket = nil
            return false
        }
        if dropRequested { connection.writeSide.closeDirectWrites() }  // lws closes the socket when this returns
        return dropRequested
    }

    /// Carries out what user tasks asked for (posted work).
    func service(_ connection: ClientConnection, requests: ConnectionStateMachine.ServiceRequests, loop: LoopConnections) {
        assertOnLoop(connection)
        guard let socket, !hasEnded, !dropRequested else { return }
        if requests.contains(.abort), !isOpen {
            // Before the upgrade request went out, drop the attempt at once. After, the
            // server may already have upgraded: give its answer a moment, so a 101 is
            // closed properly with 1001 (see `opened`) instead of dropped.
            if case .upgrading(let answer) = opening.step, !answer.isReadingRefusal,
               let deadline = connection.machine.withLock({ $0.waitForAbandonedUpgrade(now: .now) }) {
                socket.setTimer(max(.milliseconds(1), deadline - .now))
            } else {
                opening.error = .connectionFailed("closed before the handshake finished")
                requestDrop()
            }
            return
        }
        if requests.contains(.resumeReading), reader.isPaused {
            resumeReading(connection, loop: loop)
        }
        if requests.contains(.deadlineMoved) { armTimer(connection) }
        if requests.contains(.write), isOpen {
            flush(connection, loop: loop)
        }
        if requests.contains(.applyDeferredFailure),
           let failing = connection.machine.withLock({ $0.applyDeferredFailure(now: .now) }) {
            carryOut(failing, connection)
            flush(connection, loop: loop)
        }
    }

    /// Drops the socket at the next callback (timer set to fire at once when outside one).
    func requestDrop() {
        dropRequested = true
        socket?.setTimer(.microseconds(1))
    }

    // MARK: - Timers

    /// Arms the socket's one lws timer for the machine's nearest deadline.
    func armTimer(_ connection: ClientConnection) {
        guard let socket, !dropRequested, !hasEnded else { return }
        guard let nearest = connection.machine.withLock({ $0.nextDeadline }) else {
            socket.setTimer(nil)
            return
        }
        socket.setTimer(max(.microseconds(1), nearest - .now))
    }

    /// The timer fired: the machine says what is due, the transport does it.
    func timerFired(_ connection: ClientConnection, loop: LoopConnections) {
        guard !dropRequested, !hasEnded, let socket else { return }
        let now = ContinuousClock.now
        // A pong may be among bytes not read yet (a busy loop): look before calling the peer dead.
        let overdue = connection.machine.withLock { $0.isPongOverdue(at: now) }
        let unread = overdue && socket.peekInput() == .unread
        switch connection.machine.withLock({ $0.timerFired(now: now, unreadInputWaiting: unread) }) {
        case .rearm:
            break
        case .handshakeTimedOut(let abandoned):
            if case .upgrading(var answer) = opening.step, let refusal = answer.refusalCutShort(connectionClosed: false) {
                // The body did not finish in time: report the refusal with what came.
                opening.step = .upgrading(answer)
                failHandshake(connection, refusal)
            } else {
                failHandshake(connection, abandoned ? .connectionFailed("closed before the handshake finished") : handshakeTimedOut)
            }
            return
        case .abandonedUpgradeExpired:
            failHandshake(connection, .connectionFailed("closed before the handshake finished"))
            return
        case .fail(let failing):
            carryOut(failing, connection)
            flush(connection, loop: loop)
        case .dropAfterClose(let finished):
            if !finished { connection.logger.debug("the close did not finish in time; dropping the socket") }
            requestDrop()
            return
        case .sendKeepalivePing(let payload):
            _ = connection.writeSide.enqueueControl(.ping, payload: payload)
            configuration.wireEventObserver?(.pingSent(keepalive: true))
            flush(connection, loop: loop)
        case .pongTimedOut:
            connection.logger.debug("no pong within \(configuration.pongTimeout); dropping the connection")
            requestDrop()
            return
        case .sendHeartbeat:
            if let heartbeat = configuration.heartbeat, connection.machine.withLock({ $0.sendFromLoop(heartbeat.message) }) {
                flush(connection, loop: loop)
            }
        case .heartbeatTimedOut:
            connection.logger.debug("no reply to the heartbeat; dropping the connection")
            requestDrop()
            return
        }
        armTimer(connection)
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
