import WebSocketCore

extension ClientEngine {
    // MARK: - Frames in

    /// Feeds frames to the assembler and acts on what they amount to, as
    /// ``ClientTransport/readFrames(_:_:loop:)`` does: when the consumer's buffer fills and
    /// reading pauses, the rest of the read is held until the consumer catches up.
    mutating func readFrames(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        if isReadingPaused {
            heldInput.append(contentsOf: bytes)
            return
        }
        var offset = 0
        while offset < bytes.count, isOpen, !wantsSocketClosed, var reader = assembler {
            assembler = nil
            let room = machine.roomForRead(now: now)
            let consumed = bytes.withUnsafeBytes { all in
                reader.read(
                    UnsafeRawBufferPointer(rebasing: all[offset...]), into: &inbound,
                    messageLimit: room.messages, byteLimit: room.bytes)
            }
            assembler = reader
            offset += consumed
            handleInbound(now: now)
            if isReadingPaused, offset < bytes.count, !reader.isFinished {
                heldInput.append(contentsOf: bytes[offset...])
                return
            }
        }
    }

    /// Acts on what one read amounted to: messages to the machine in batches, each ahead
    /// of the control frame or failure that followed it.
    private mutating func handleInbound(now: ContinuousClock.Instant) {
        var incoming: [WebSocketMessage] = []
        let read = inbound
        inbound.removeAll(keepingCapacity: true)
        for event in read {
            if case .message(let content) = event {
                incoming.append(WebSocketMessage(content))
                continue
            }
            deliver(&incoming, now: now)
            switch event {
            case .message:
                break
            case .ping(let payload):
                if let answer = machine.pongAnswering(payload) { writer.enqueueControl(.pong, payload: answer) }
            case .pong(let payload):
                if machine.pongReceived(payload, at: now) != nil { events.append(.pong(payload)) }
            case .close(let frame):
                let action = machine.peerClosed(frame, now: now)
                if let answer = action.answer { writer.enqueueCloseNow(answer) }
            case .failure(let failure):
                switch machine.protocolFailure(failure, now: now) {
                case .fail(let failing): carryOut(failing)
                case .deferred: isReadingPaused = true
                }
            }
        }
        deliver(&incoming, now: now)
    }

    /// Hands the messages gathered so far to the machine (the consumer's buffer).
    private mutating func deliver(_ incoming: inout [WebSocketMessage], now: ContinuousClock.Instant) {
        guard !incoming.isEmpty else { return }
        var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
        if machine.receive(contentsOf: incoming, deliveries: &deliveries, now: now) { isReadingPaused = true }
        incoming.removeAll()
    }

    /// Fails the connection from this side, as the machine decided: its close frame goes out
    /// ahead of anything not started, and what arrives from now on is ignored.
    mutating func carryOut(_ failing: ConnectionStateMachine.Failing) {
        if let frame = failing.closeFrame { writer.enqueueCloseNow(frame) }
        isReadingPaused = false
        heldInput = []
    }

    // MARK: - Bytes out

    /// The next bytes to write, at most `budget` (what the socket takes now): the upgrade
    /// request, then frames taken from the machine. Empty when nothing is waiting.
    mutating func takeOutput(budget: Int, now: ContinuousClock.Instant) -> [UInt8] {
        guard budget > 0, !hasEnded, !wantsSocketClosed else { return [] }
        serviceRequests(now: now)
        if !request.isEmpty {
            let count = min(budget, request.count)
            defer { request.removeFirst(count) }
            streamBytes += count
            return Array(request[..<count])
        }
        guard isOpen else { return [] }
        if pending.count < budget { encode(atLeast: budget - pending.count, now: now) }
        let count = min(budget, pending.count)
        let output = Array(pending[..<count])
        pending.removeFirst(count)
        streamBytes += count
        // This side's close frame is whole on the wire: the close moves on (the linger).
        if writer.closeWritten, pending.isEmpty { _ = machine.closeFrameWritten(now: now) }
        return output
    }

    /// Encodes frames until `wanted` more bytes are ready or nothing is left, recording each
    /// message completed (and the close frame) at the stream offset it ends at.
    private mutating func encode(atLeast wanted: Int, now: ContinuousClock.Instant) {
        var scratch = [UInt8](repeating: 0, count: max(wanted, 256))
        var produced = 0
        while produced < wanted {
            if writer.wantsMessages {
                var batch = ConnectionStateMachine.WriteBatch()
                machine.takeWrites(budget: 1 << 20, into: &batch, now: now)
                for (id, payload) in batch.pings {
                    writer.enqueueControl(.ping, payload: payload ?? Keepalive.payload(tag: .user, id: id))
                }
                for message in batch.messages { writer.enqueue(message) }
                if let close = batch.close { writer.enqueueClose(close) }
            }
            let start = streamBytes + pending.count
            let count = scratch.withUnsafeMutableBytes { writer.fill($0) }
            guard count > 0 else { break }
            pending.append(contentsOf: scratch[..<count])
            produced += count
            for (end, message) in writer.completedInFill { ledger.record(message, endingAt: start + end) }
            if let closeEnd = writer.closeEndInFill { closeFrameStreamEnd = start + closeEnd }
        }
    }

    /// Whether bytes wait to be taken (or can be encoded now).
    var hasOutput: Bool {
        guard !hasEnded, !wantsSocketClosed else { return false }
        if !request.isEmpty || !pending.isEmpty { return true }
        return isOpen && (writer.hasWork || (!writer.isClosing && machine.hasPendingWrites))
    }

    /// Forgets the messages whose bytes the peer's TCP acknowledged (`acknowledged` bytes of the stream).
    mutating func acknowledged(_ acknowledged: Int) {
        ledger.forget(acknowledged: acknowledged)
    }

    // MARK: - Time

    /// The timer fired at `now` (the driver calls it once ``nextDeadline`` has passed);
    /// `unreadInputWaiting` says bytes wait unread (a pong may be among them). Returns what
    /// the machine decided, which the engine has carried out.
    @discardableResult
    mutating func timerFired(now: ContinuousClock.Instant, unreadInputWaiting: Bool = false) -> ConnectionStateMachine.TimerAction {
        guard !hasEnded, !wantsSocketClosed else { return .rearm }
        let action = machine.timerFired(now: now, unreadInputWaiting: unreadInputWaiting)
        switch action {
        case .rearm, .sendHeartbeat:
            break
        case .handshakeTimedOut(let abandoned):
            if case .upgrading(var answer) = phase, let refusal = answer.refusalCutShort(connectionClosed: false) {
                phase = .upgrading(answer)
                failHandshake(refusal)
            } else {
                failHandshake(abandoned
                    ? .connectionFailed("closed before the handshake finished")
                    : WebSocketError(code: .timedOut, reason: "after \(configuration.connectTimeout) (connectTimeout) waiting for the opening handshake"))
            }
        case .abandonedUpgradeExpired:
            failHandshake(.connectionFailed("closed before the handshake finished"))
        case .fail(let failing):
            carryOut(failing)
        case .dropAfterClose, .pongTimedOut, .heartbeatTimedOut:
            wantsSocketClosed = true
        case .sendKeepalivePing(let payload):
            writer.enqueueControl(.ping, payload: payload)
        }
        return action
    }

    // MARK: - The end

    /// The socket is gone: the peer ended TCP (`abnormal` is nil for a FIN, the reset's
    /// error otherwise), or the driver closed it after ``wantsSocketClosed``.
    /// `acknowledged` is what the peer's TCP acknowledged of ``streamBytes``; `nil` when
    /// the socket cannot tell (every written message then counts as delivered).
    mutating func socketClosed(acknowledged: Int?, abnormal: WebSocketError? = nil) {
        if isOpen, abnormalEnd == nil {
            abnormalEnd = abnormal ?? .connectionFailed("the server closed the connection without a close frame (\(url.hostHeader))")
        }
        if case .upgrading(var answer) = phase, let refusal = answer.refusalCutShort(connectionClosed: true) {
            phase = .upgrading(answer)
            connectError = refusal
        }
        end(acknowledged: acknowledged)
    }

    /// Settles what the peer received and ends the machine: the ``Event/ended(_:)`` event.
    /// Called again (the socket's close after a failed handshake ended the engine), it does
    /// nothing: the machine ends once, and only its ending is reported.
    mutating func end(acknowledged: Int?) {
        let wasOpen = isOpen
        phase = .ended
        var unsent: [WebSocketMessage] = []
        var closeFrameAcknowledged = true
        if wasOpen {
            if let acknowledged {
                unsent = ledger.unacknowledged(acknowledged: acknowledged)
                closeFrameAcknowledged = closeFrameStreamEnd.map { $0 <= acknowledged } ?? true
            }
            unsent += writer.unwrittenMessages
        }
        ledger.removeAll()
        pending = []
        writer = FrameWriter()
        assembler = nil
        heldInput = []
        let error = connectError ?? (wasOpen ? nil : .connectionFailed("the connection closed during the opening handshake (\(url.hostHeader))"))
        let finale = if let error, !wasOpen {
            machine.connectFailed(error)
        } else {
            machine.transportClosed(unwritten: unsent, abnormalEnd: abnormalEnd, closeFrameAcknowledged: closeFrameAcknowledged)
        }
        guard finale != nil, let ending = machine.ending else { return }
        drainMessages()
        events.append(.ended(ending))
    }
}
