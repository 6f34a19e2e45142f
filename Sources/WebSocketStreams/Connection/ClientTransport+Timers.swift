import Logging
import SynchronizationSupport

extension ClientTransport {
    /// Arms the socket's one lws timer for the nearest deadline of the concerns that have
    /// one: the handshake (until open), the close (once closing), and keep-alive pings and
    /// pong deadlines (while open).
    func armTimer() {
        guard let socket, !dropRequested, !hasEnded else { return }
        var deadlines: [ContinuousClock.Instant] = []
        if !isOpen { deadlines.append(handshakeDeadline) }
        if let deadline = closing.deadline { deadlines.append(deadline) }
        if let deferred = deferredFailure { deadlines.append(deferred.deadline) }
        if isOpen, closing.deadline == nil, let next = keepalive?.nextDeadline { deadlines.append(next) }
        guard let nearest = deadlines.min() else {
            socket.setTimer(nil)
            return
        }
        socket.setTimer(max(.microseconds(1), nearest - .now))
    }

    /// The timer fired: act on whichever deadline passed, then re-arm for the next.
    func timerFired(_ connection: ClientConnection, loop: ClientLoop) {
        guard !dropRequested, !hasEnded else { return }
        let now = ContinuousClock.now
        if !isOpen {
            if now >= handshakeDeadline {
                if case .rejected(let head, let body) = phase {
                    // The body did not finish in time: report the refusal with what came.
                    failHandshake(connection, rejection(head, body: body))
                    return
                }
                let cancelled = connection.machine.withLock { $0.connectCancelled || $0.isClosingLocally }
                failHandshake(connection, cancelled ? .connectionFailed("closed before the handshake finished") : handshakeTimedOut)
                return
            }
            if connection.machine.withLock({ $0.connectCancelled || $0.isClosingLocally }) {
                // The grace period for an abandoned upgrade ran out.
                failHandshake(connection, .connectionFailed("closed before the handshake finished"))
                return
            }
            armTimer()
            return
        }
        if let deferred = deferredFailure, now >= deferred.deadline {
            applyDeferredFailure(connection, loop: loop)
            return
        }
        if let deadline = closing.deadline, now >= deadline {
            if !(closing.sent && (closing.received || closing.failing)) {
                connection.logger.debug("the close did not finish in time; dropping the socket")
            }
            requestDrop()
            return
        }
        guard closing.deadline == nil, var keepalive, let socket else {
            armTimer()
            return
        }
        let unread = keepalive.inFlight.map { now >= $0.deadline } == true && socket.peekInput() == .unread
        let action = keepalive.tick(at: now, unreadInputWaiting: unread)
        self.keepalive = keepalive
        switch action {
        case .none:
            break
        case .sendPing:
            var keepalive = keepalive
            let (tag, id) = keepalive.nextKeepalivePayload()
            keepalive.pingSent(tag: tag, id: id, at: now)
            self.keepalive = keepalive
            writer.enqueueControl(.ping, payload: Keepalive.payload(tag: tag, id: id))
            configuration.wireEventObserver?(.pingSent(keepalive: true))
            flush(connection, loop: loop)
        case .timedOut:
            connection.machine.withLock { $0.failed(with: .pongTimeout, closeCode: nil) }
            connection.logger.debug("no pong within \(configuration.pongTimeout); dropping the connection")
            requestDrop()
            return
        }
        armTimer()
    }

    /// A handshake that ran past `connectTimeout`: the limit, the setting, and the step it
    /// was waiting on.
    private var handshakeTimedOut: WebSocketError {
        let step = switch phase {
        case .idle, .connecting: "for the TCP connection to \(target.description)"
        case .tunnelling: "for the proxy's answer to CONNECT (\(target.description))"
        case .negotiatingSOCKS: "for the SOCKS5 proxy (\(target.description))"
        case .securing: "in the TLS handshake with \(url.hostHeader)"
        case .upgrading: "for the server's answer to the upgrade request (\(url.hostHeader)\(url.pathAndQuery))"
        case .rejected, .open, .ended: "in the opening handshake with \(url.hostHeader)"
        }
        return WebSocketError(code: .timedOut, reason: "after \(configuration.connectTimeout) (connectTimeout) waiting \(step)")
    }
}
