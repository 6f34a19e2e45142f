import Synchronization
import SynchronizationSupport
import Logging
import WebSocketCore

extension ClientTransport {
    /// Bytes arrived from the socket (`LWS_CALLBACK_RAW_RX`).
    func received(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: LoopConnections) {
        if let tls, !isNegotiatingWithProxy {
            connection.writeSide.withTLSSession { tls.receiveCiphertext(bytes) }
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
    func pumpTLS(_ connection: ClientConnection, loop: LoopConnections) {
        guard let tls else { return }
        if case .securing = opening.step {
            continueTLSHandshake(connection, loop: loop)
            return
        }
        let scratch = loop.readScratch
        while !reader.isPaused, !dropRequested, !hasEnded {
            let outcome = connection.writeSide.withTLSSession({ tls.readPlaintext(into: scratch) }, stopsDirectWrites: {
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
                if !isOpen { opening.error = .tlsFailure("\(reason) (\(url.hostHeader))") }
                // After the handshake, a broken record is a lost connection (retried), not a
                // certificate or configuration problem.
                noteAbnormalEnd(.connectionFailed("TLS failed: \(reason) (\(url.hostHeader))"))
                // Direct writes were closed as the read failed (`stopsDirectWrites`): the
                // session is the loop's alone, and what they left goes before the alert.
                flushCiphertext(connection, loop: loop)  // the alert, if TLS wrote one
                requestDrop()
                return
            }
        }
    }

    /// Plaintext from the socket or from TLS: frames once the protocol runs, else the
    /// answer of an opening step.
    func receivedPlaintext(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: LoopConnections) {
        if isOpen {
            readFrames(connection, bytes, loop: loop)
        } else {
            receivedDuringOpening(connection, bytes, loop: loop)
        }
    }

    /// Feeds frames to the assembler and acts on what they amount to, one message at a
    /// time: when the consumer's buffer fills up and reading pauses, the bytes not read
    /// yet are held (at most one read's worth) and read when reading resumes, so the
    /// buffer never holds more than one message past its limit.
    func readFrames(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: LoopConnections) {
        if !reader.heldInput.isEmpty {
            reader.heldInput.append(contentsOf: bytes)
            return
        }
        var rest = bytes
        while !rest.isEmpty, isOpen {
            guard var assembler = reader.assembler else { return }
            reader.assembler = nil
            let room = connection.machine.withLock { $0.roomForRead(now: .now) }
            let consumed = assembler.read(rest, into: &reader.events, messageLimit: room.messages, byteLimit: room.bytes)
            reader.assembler = assembler
            if room.deadlineMoved { armTimer(connection) }
            handleEvents(connection, loop: loop)
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            if reader.isPaused, !rest.isEmpty, assembler.isFinished == false {
                reader.heldInput.append(contentsOf: rest)
                return
            }
        }
    }

    /// Acts on what one read amounted to. Messages go to the state machine in one batch
    /// (one lock, at most one consumer resumed), each batch ahead of the control frame or
    /// failure that followed it.
    private func handleEvents(_ connection: ClientConnection, loop: LoopConnections) {
        guard !reader.events.isEmpty else { return }
        var events: [InboundEvent] = []
        swap(&events, &reader.events)
        defer {
            events.removeAll(keepingCapacity: events.count <= 1024)
            swap(&events, &reader.events)
        }
        for event in events {
            if case .message(let message) = event {
                reader.incoming.append(WebSocketMessage(message))
                continue
            }
            deliverIncoming(connection, loop: loop)
            switch event {
            case .message:
                break
            case .ping(let payload):
                guard let answer = connection.machine.withLock({ $0.pongAnswering(payload) }) else { break }
                // A burst of pings: answer as they come, so pongs are dropped only when
                // the peer stops reading them (the writer then keeps the latest).
                if connection.writeSide.enqueueControl(.pong, payload: answer) >= 64 { flush(connection, loop: loop) }
            case .pong(let payload):
                pongReceived(connection, payload)
            case .close(let frame):
                peerClosed(connection, frame)
            case .failure(let failure):
                switch connection.machine.withLock({ $0.protocolFailure(failure, now: .now) }) {
                case .fail(let failing):
                    carryOut(failing, connection)
                case .deferred:
                    pauseReading()
                    armTimer(connection)
                }
            }
        }
        deliverIncoming(connection, loop: loop)
    }

    /// Hands the messages gathered so far to the state machine.
    private func deliverIncoming(_ connection: ClientConnection, loop: LoopConnections) {
        guard !reader.incoming.isEmpty else { return }
        if let heartbeat = configuration.heartbeat { takeHeartbeatReplies(heartbeat, connection) }
        guard !reader.incoming.isEmpty else { return }
        connection.metrics?.received(reader.incoming)
        // Both arrays are the reader's, reused from read to read (no allocation per read).
        var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
        swap(&deliveries, &reader.deliveries)
        let pause = connection.machine.withLock {
            $0.receive(contentsOf: reader.incoming, deliveries: &deliveries, now: .now)
        }
        reader.incoming.removeAll(keepingCapacity: reader.incoming.count <= 1024)
        // Latency mode: a consumer that polls instead of parking sees this.
        if connection.consumerPollNanoseconds > 0 { connection.receivedGeneration.add(1, ordering: .releasing) }
        // A consumer on another thread is resumed now, before this read's flush and the rest
        // of the pass: waking its pool thread overlaps the loop's remaining work (W1 on the
        // default executor: 0.57x raw C against 0.41x resumed after the pass, paired runs).
        // One on this loop runs after the pass either way; it keeps the pass's order.
        let consumerOnLoop = connection.consumerWaitsOnLoop.load(ordering: .relaxed)
        for (consumer, message) in deliveries {
            if consumerOnLoop { loop.deliverAfterTurn(consumer, message) } else { consumer.resume(returning: message) }
        }
        deliveries.removeAll(keepingCapacity: true)
        swap(&deliveries, &reader.deliveries)
        if pause { pauseReading() }
    }

    /// Notes a reply to the application heartbeat among the messages read, and keeps
    /// replies from the consumer unless ``WebSocketHeartbeat/deliversReplies``.
    private func takeHeartbeatReplies(_ heartbeat: WebSocketHeartbeat, _ connection: ClientConnection) {
        var replied = false
        if heartbeat.deliversReplies {
            replied = reader.incoming.contains(where: heartbeat.isReply)
        } else {
            let before = reader.incoming.count
            reader.incoming.removeAll(where: heartbeat.isReply)
            replied = reader.incoming.count != before
        }
        guard replied else { return }
        connection.machine.withLock { $0.heartbeatReplied(now: .now) }
        armTimer(connection)
    }

    func pauseReading() {
        guard !reader.isPaused, let socket else { return }
        reader.isPaused = true
        socket.setReading(false)
    }

    func resumeReading(_ connection: ClientConnection, loop: LoopConnections) {
        guard reader.isPaused, let socket, connection.machine.withLock({ $0.readingResumed(now: .now) }) else { return }
        reader.isPaused = false
        if !reader.heldInput.isEmpty {
            let held = reader.heldInput
            reader.heldInput = []
            held.withUnsafeBytes { readFrames(connection, $0, loop: loop) }
            flush(connection, loop: loop)
            if reader.isPaused { return }
        }
        socket.setReading(true)
        armTimer(connection)
        // Bytes TLS decrypted (or received) before the pause wait inside it.
        if tls != nil {
            pumpTLS(connection, loop: loop)
            flush(connection, loop: loop)
        }
    }

    private func pongReceived(_ connection: ClientConnection, _ payload: [UInt8]) {
        guard let (roundTrip, waiter) = connection.machine.withLock({ $0.pongReceived(payload, at: .now) }) else { return }
        connection.metrics?.pongReceived(roundTrip: roundTrip)
        configuration.wireEventObserver?(.pongReceived(roundTrip: roundTrip))
        if let (waiter, userRoundTrip) = waiter { waiter.resume(returning: userRoundTrip) }
        armTimer(connection)
    }

    /// The peer's close frame: reported, and answered as the machine says.
    private func peerClosed(_ connection: ClientConnection, _ frame: CloseFrame) {
        configuration.wireEventObserver?(.closeReceived(code: frame.code ?? .noStatusReceived, reason: frame.reason))
        let action = connection.machine.withLock { $0.peerClosed(frame, now: .now) }
        for sender in action.failedSenders { sender.resume(throwing: action.error) }
        if let answer = action.answer { connection.writeSide.enqueueCloseNow(answer) }
        if action.endsTLS { tls?.close() }
        armTimer(connection)
    }

    /// Fails the connection from this side, as the machine decided: the close frame with
    /// the failure's code goes out ahead of anything not yet started, and nothing more is read.
    func carryOut(_ failing: ConnectionStateMachine.Failing, _ connection: ClientConnection) {
        if failing.failure.code == .messageTooBig, !failing.failure.exceedsFragmentLimit {
            connection.logger.debug("an incoming message exceeds maxMessageSize (\(configuration.maxMessageSize) bytes); closing with 1009")
        } else {
            connection.logger.debug("failing the connection: \(failing.failure.reason); closing with \(failing.failure.code.rawValue)")
        }
        for sender in failing.failedSenders { sender.resume(throwing: failing.error) }
        if let frame = failing.closeFrame { connection.writeSide.enqueueCloseNow(frame) }
        // Reading may have paused (a failure held for the consumer pauses it): what arrives
        // now is ignored, but the server's end of TCP must be seen, or the close lingers
        // its full second.
        if reader.isPaused, let socket {
            reader.isPaused = false
            reader.heldInput = []
            socket.setReading(true)
        }
        armTimer(connection)
    }
}
