import FoundationEssentials
import Logging
import SynchronizationSupport

extension ClientTransport {
    /// Bytes arrived from the socket (`LWS_CALLBACK_RAW_RX`).
    func received(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: ClientLoop) {
        if let limit = closing.lingerLimit {
            // Lingering after the close exchange: a peer still sending is still finishing.
            closing.deadline = min(limit, .now + Self.lingerAfterClose)
        }
        if let tls, !isNegotiatingWithProxy {
            withTLSSession(connection) { tls.receiveCiphertext(bytes) }
            pumpTLS(connection, loop: loop)
        } else {
            receivedPlaintext(connection, bytes, loop: loop)
        }
        flush(connection, loop: loop)
    }

    /// Decrypts what TLS holds and hands it on, until it holds nothing, reading is
    /// paused, or the connection is past reading. Also runs the TLS handshake.
    ///
    /// Reading pauses in the middle of what TLS has buffered (decrypted or not): nothing
    /// more is decrypted then, and lws stops polling the socket. When reading resumes,
    /// this runs again from posted work, since no poll event will announce bytes that
    /// are already inside TLS.
    func pumpTLS(_ connection: ClientConnection, loop: ClientLoop) {
        guard let tls else { return }
        if case .securing = phase {
            continueTLSHandshake(connection, loop: loop)
            return
        }
        let scratch = loop.readScratch
        while !readingPaused, !dropRequested, !hasEnded {
            let outcome = withTLSSession(connection, { tls.readPlaintext(into: scratch) }, stopsDirectWrites: {
                if case .failed = $0 { true } else { false }
            })
            switch outcome {
            case .bytes(let count):
                receivedPlaintext(connection, UnsafeRawBufferPointer(rebasing: scratch[..<count]), loop: loop)
            case .wantsMoreInput:
                return
            case .closedByPeer:
                // close_notify: the peer is gone. Without a close frame first, that is a 1006.
                connection.logger.debug("the server ended the TLS session")
                noteAbnormalEnd(.connectionFailed(
                    "the server ended TLS (close_notify) without a WebSocket close frame (\(url.hostHeader))"))
                requestDrop()
                return
            case .failed(let reason):
                connection.logger.debug("TLS failed: \(reason)")
                if !isOpen { handshakeError = .tlsFailure("\(reason) (\(url.hostHeader))") }
                // After the handshake, a broken record is a lost connection (retried), not a
                // certificate or configuration problem.
                noteAbnormalEnd(.connectionFailed("TLS failed: \(reason) (\(url.hostHeader))"))
                // Direct writes were closed as the read failed (`stopsDirectWrites`): the
                // session is the loop's alone, and their leftover goes before the alert.
                flushCiphertext(connection, loop: loop)  // the alert, if TLS wrote one
                requestDrop()
                return
            }
        }
    }

    /// Runs the TLS handshake as far as the bytes received allow.
    func continueTLSHandshake(_ connection: ClientConnection, loop: ClientLoop) {
        guard let tls else { return }
        switch tls.continueHandshake() {
        case .wantsMoreInput:
            flushCiphertext(connection, loop: loop)
        case .failed(let error):
            flushCiphertext(connection, loop: loop)
            failHandshake(connection, error)
        case .done:
            connection.logger.trace("TLS established with \(url.hostHeader)\(tls.isResumed ? " (resumed session)" : "")")
            sendUpgradeRequest(connection, loop: loop)
            pumpTLS(connection, loop: loop)
        }
    }

    /// Plaintext from the socket or from TLS, handled by phase.
    func receivedPlaintext(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: ClientLoop) {
        switch phase {
        case .negotiatingSOCKS(var handshake):
            phase = .idle
            var input = Array(bytes)
            // An answer that came with an earlier one waits in the handshake: after each
            // request, look again before reading more.
            while true {
                let action: SOCKS5Handshake.Action
                do {
                    action = try handshake.receive(input)
                } catch {
                    failHandshake(connection, error)
                    return
                }
                input = []
                phase = .negotiatingSOCKS(handshake)
                switch action {
                case .waitForMore:
                    return
                case .send(let request):
                    send(request, connection: connection, loop: loop)
                    if hasEnded || dropRequested { return }
                case .tunnelOpen(let leftover):
                    connection.logger.trace("the SOCKS5 proxy opened a tunnel to \(url.hostHeader)")
                    startTLSOrUpgrade(connection, loop: loop)
                    if !leftover.isEmpty { leftover.withUnsafeBytes { received(connection, $0, loop: loop) } }
                    return
                }
            }
        case .tunnelling(var parser):
            phase = .idle
            do {
                guard let (head, consumed) = try parser.parse(bytes) else {
                    phase = .tunnelling(parser)
                    return
                }
                guard (200..<300).contains(head.status) else {
                    failHandshake(connection, .proxyRejected(status: head.status, headers: head.headerDictionary))
                    return
                }
                connection.logger.trace("the proxy opened a tunnel to \(url.hostHeader)")
                startTLSOrUpgrade(connection, loop: loop)
                let rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                if !rest.isEmpty { received(connection, rest, loop: loop) }
            } catch {
                failHandshake(connection, .connectionFailed("the proxy's answer to CONNECT is not HTTP: \(error)"))
            }
        case .upgrading(var parser):
            phase = .idle
            do {
                guard let (head, consumed) = try parser.parse(bytes) else {
                    phase = .upgrading(parser)
                    return
                }
                reportHandshakeResponse(head)
                let rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                upgradeAnswered(connection, head: head, rest: rest, loop: loop)
            } catch {
                if tls == nil, let first = bytes.first, first == 0x15 || first == 0x16 {
                    // A TLS alert or handshake record: the server expected a ClientHello.
                    failHandshake(connection, .connectionFailed(
                        "the server answered in TLS, not HTTP (\(url.hostHeader)): use wss:// for this server"))
                    return
                }
                failHandshake(connection, .connectionFailed("the server's answer to the upgrade request is not valid HTTP: \(error)"))
            }
        case .rejected(let head, var body):
            if body.append(bytes) {
                failHandshake(connection, rejection(head, body: body))
            } else {
                phase = .rejected(head, body)
            }
        case .open:
            readFrames(connection, bytes, loop: loop)
        case .idle, .connecting, .securing, .ended:
            break
        }
    }

    /// The server answered the upgrade request.
    private func upgradeAnswered(
        _ connection: ClientConnection, head: HTTPResponseHead, rest: UnsafeRawBufferPointer, loop: ClientLoop
    ) {
        let offeredExtensions = configuration.compression ? ["permessage-deflate"] : []
        switch HandshakeValidator.validate(
            head, key: handshakeKey, offeredSubprotocols: configuration.subprotocols, offeredExtensions: offeredExtensions
        ) {
        case .success(let negotiated):
            opened(connection, negotiated: negotiated, loop: loop)
            if isOpen, !rest.isEmpty { readFrames(connection, rest, loop: loop) }
        case .failure(.rejected):
            var body = HTTPBodyCollector(head: head)
            if body.append(rest) {
                failHandshake(connection, rejection(head, body: body))
            } else {
                phase = .rejected(head, body)
            }
        case .failure(.invalid(let reason)):
            failHandshake(connection, .connectionFailed("\(reason) (\(url.hostHeader))"))
        }
    }

    /// The typed error for an upgrade the server refused. A success or a 404 means no
    /// WebSocket endpoint is at that path (a plain HTTP server, or the wrong path): the error
    /// says so, rather than only the status.
    func rejection(_ head: HTTPResponseHead, body: HTTPBodyCollector) -> WebSocketError {
        let rejected = WebSocketError.handshakeRejected(status: head.status, headers: head.headerDictionary, body: Data(body.body))
        guard (200..<300).contains(head.status) || head.status == 404 else { return rejected }
        return WebSocketError(
            // The path without its query, which may carry a token.
            code: .handshakeRejected,
            reason: "no WebSocket endpoint at \(url.pathAndQuery.prefix { $0 != "?" }) on \(url.hostHeader)",
            httpStatus: rejected.httpStatus, headers: rejected.headers, body: rejected.body)
    }

    // MARK: - The protocol

    /// Feeds frames to the assembler and acts on what they amount to, one message at a
    /// time: when the consumer's buffer fills up and reading pauses, the bytes not read
    /// yet are held (at most one read's worth) and read when reading resumes, so the
    /// buffer never holds more than one message past its limit.
    private func readFrames(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: ClientLoop) {
        if !heldInput.isEmpty {
            heldInput.append(contentsOf: bytes)
            return
        }
        var rest = bytes
        while !rest.isEmpty, isOpen {
            guard var assembler else { return }
            self.assembler = nil
            let room = connection.machine.withLock { $0.inboundRoom }
            let consumed = assembler.read(rest, into: &events, messageLimit: room.messages, byteLimit: room.bytes)
            self.assembler = assembler
            handleEvents(connection, loop: loop)
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            if readingPaused, !rest.isEmpty, assembler.isFinished == false {
                heldInput.append(contentsOf: rest)
                return
            }
        }
    }

    /// Acts on what one read amounted to. Messages go to the state machine in one batch
    /// (one lock, at most one consumer resumed), each batch ahead of the control frame or
    /// failure that followed it.
    private func handleEvents(_ connection: ClientConnection, loop: ClientLoop) {
        guard !events.isEmpty else { return }
        if keepalive?.inFlight != nil { keepalive?.dataReceived(at: .now) }
        for event in events {
            if case .message(let message) = event {
                incoming.append(message)
                continue
            }
            deliverIncoming(connection, loop: loop)
            switch event {
            case .message:
                break
            case .ping(let payload):
                writer.enqueueControl(.pong, payload: payload)
                // A burst of pings: answer as they come, so pongs are dropped only when
                // the peer stops reading them (the writer then keeps the latest).
                if writer.pendingControlCount >= 64 { flush(connection, loop: loop) }
            case .pong(let payload):
                pongReceived(connection, payload, at: .now)
            case .close(let frame):
                peerClosed(connection, frame)
            case .failure(let failure):
                failOrDefer(connection, failure)
            }
        }
        deliverIncoming(connection, loop: loop)
        events.removeAll(keepingCapacity: events.count <= 1024)
    }

    /// Hands the messages gathered so far to the state machine.
    private func deliverIncoming(_ connection: ClientConnection, loop: ClientLoop) {
        guard !incoming.isEmpty else { return }
        connection.metrics?.received(incoming)
        // The array is the transport's, reused from read to read (no allocation per read).
        var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
        swap(&deliveries, &spareDeliveries)
        let pause = connection.machine.withLock { $0.receive(contentsOf: incoming, deliveries: &deliveries) }
        incoming.removeAll(keepingCapacity: incoming.count <= 1024)
        for (consumer, message) in deliveries { loop.deliverAfterTurn(consumer, message) }
        deliveries.removeAll(keepingCapacity: true)
        swap(&deliveries, &spareDeliveries)
        if pause { pauseReading() }
    }

    func pauseReading() {
        guard !readingPaused, let socket else { return }
        readingPaused = true
        socket.setReading(false)
        // Pongs cannot be read either: no pong deadline until reading resumes, or a
        // healthy peer behind a slow consumer would look dead.
        keepalive?.pause()
        armTimer()
    }

    func resumeReading(_ connection: ClientConnection, loop: ClientLoop) {
        guard readingPaused, deferredFailure == nil, let socket else { return }
        readingPaused = false
        if !heldInput.isEmpty {
            let held = heldInput
            heldInput = []
            held.withUnsafeBytes { readFrames(connection, $0, loop: loop) }
            flush(connection, loop: loop)
            if readingPaused { return }
        }
        socket.setReading(true)
        keepalive?.resume(at: .now)
        armTimer()
        // Bytes TLS decrypted (or received) before the pause wait inside it.
        if tls != nil {
            pumpTLS(connection, loop: loop)
            flush(connection, loop: loop)
        }
    }

    private func pongReceived(_ connection: ClientConnection, _ payload: [UInt8], at now: ContinuousClock.Instant) {
        guard let (ping, roundTrip) = keepalive?.pongReceived(payload, at: now) else { return }
        connection.metrics?.pongReceived(roundTrip: roundTrip)
        configuration.wireEventObserver?(.pongReceived(roundTrip: roundTrip))
        if ping.tag == .user, let (waiter, userRoundTrip) = connection.machine.withLock({ $0.pong(id: ping.id, at: now) }) {
            waiter.resume(returning: userRoundTrip)
        }
        armTimer()
    }

    /// The peer's close frame: reported, and answered with the same code (RFC 6455 5.5.1)
    /// unless this side's close frame went first.
    private func peerClosed(_ connection: ClientConnection, _ frame: CloseFrame) {
        closing.received = true
        let code = frame.code ?? .noStatusReceived
        configuration.wireEventObserver?(.closeReceived(code: code, reason: frame.reason))
        let (senders, error) = connection.machine.withLock { machine in
            machine.peerClosed(code: code, reason: frame.reason)
            return (machine.takeParkedSendersIfClosing(), machine.closedError)
        }
        for sender in senders { sender.resume(throwing: error) }
        if !writer.isClosing { queueClose(CloseFrame(code: frame.code), now: true) }
        // Bounded even if our answer cannot get out (a peer that stopped reading).
        if closing.deadline == nil {
            closing.deadline = .now + Self.closeTimeout
            armTimer()
        }
        closeProgressed(connection)
    }

    /// Fails the connection at once, or, when the broken rule arrived right behind messages
    /// the consumer has not finished with, once it has (or after ``deferredFailureGrace``):
    /// a reply it sends to them then goes out before the close frame. Nothing more is read
    /// meanwhile.
    private func failOrDefer(_ connection: ClientConnection, _ failure: ProtocolFailure) {
        guard connection.machine.withLock({ $0.deferFailureIfMessagesPending() }) else {
            fail(connection, failure)
            return
        }
        deferredFailure = (failure, .now + Self.deferredFailureGrace)
        pauseReading()
        armTimer()
    }

    /// Applies a failure held by ``failOrDefer(_:_:)``.
    func applyDeferredFailure(_ connection: ClientConnection, loop: ClientLoop) {
        guard let (failure, _) = deferredFailure else { return }
        deferredFailure = nil
        fail(connection, failure)
        flush(connection, loop: loop)
    }

    /// Fails the connection from this side: the close frame with the failure's code goes
    /// out ahead of anything not yet started, and nothing more is read.
    func fail(_ connection: ClientConnection, _ failure: ProtocolFailure) {
        if failure.code == .messageTooBig {
            connection.logger.debug("an incoming message exceeds maxMessageSize (\(configuration.maxMessageSize) bytes); closing with 1009")
        } else {
            connection.logger.debug("failing the connection: \(failure.reason); closing with \(failure.code.rawValue)")
        }
        closing.failing = true
        let error: WebSocketError = failure.code == .messageTooBig
            ? .messageTooLarge(limit: configuration.maxMessageSize)
            : .protocolViolation(closeCode: failure.code, reason: failure.reason)
        let senders = connection.machine.withLock { machine in
            machine.failed(with: error, closeCode: failure.code, reason: failure.reason)
            return machine.takeParkedSendersIfClosing()
        }
        for sender in senders { sender.resume(throwing: error) }
        queueClose(CloseFrame(code: failure.code, reason: failure.reason), now: true)
        closing.deadline = .now + Self.lingerAfterClose
        // Reading may have paused (a failure held for the consumer pauses it): what arrives
        // now is ignored, but the server's end of TCP must be seen, or the close lingers
        // its full second.
        if readingPaused, let socket {
            readingPaused = false
            heldInput = []
            socket.setReading(true)
        }
        armTimer()
    }

    /// Queues this side's close frame: behind the queued messages, or (`now`) ahead of
    /// those not started yet.
    func queueClose(_ frame: CloseFrame, now: Bool) {
        guard !writer.isClosing else { return }
        closeFrameQueued = frame
        if now { writer.enqueueCloseNow(frame) } else { writer.enqueueClose(frame) }
    }

    /// After a close frame went out or came in: once both have (or this side failed the
    /// connection and its frame is out), wait briefly for the server to end TCP.
    func closeProgressed(_ connection: ClientConnection) {
        guard closing.sent, closing.received || closing.failing else { return }
        // The closing handshake is complete: end the TLS session too (close_notify).
        if closing.received { tls?.close() }
        let now = ContinuousClock.now
        if closing.lingerLimit == nil { closing.lingerLimit = now + Self.closeTimeout }
        let linger = now + Self.lingerAfterClose
        if closing.deadline.map({ $0 > linger }) ?? true {
            closing.deadline = linger
            armTimer()
        }
    }
}
