import LibWebSocketsLoop
import Glibc
import SynchronizationSupport
import WebSocketCore

extension WriteSide {
    /// The most one flush encodes before it lets the loop serve other connections.
    static let flushBudget = 1 << 20

    /// The plaintext TLS takes in one call, so that the end of every record is known: one
    /// record's worth (16 KiB), as OpenSSL cuts them.
    static let tlsRecordPlaintext = 16 * 1024

    /// What the loop lends a flush: its socket and TLS session, its scratch buffers, the
    /// state machine to take frames from, and what the flush may do.
    // @unchecked: lent by the loop's thread for one flush on that thread; the socket and
    // the scratch buffers are the loop's.
    struct FlushContext: @unchecked Sendable {
        let socket: RawSocket
        let tls: TLSSession?
        let scratch: UnsafeMutableRawBufferPointer
        let cipherScratch: UnsafeMutableRawBufferPointer
        /// The connection whose state machine the frames come from.
        let connection: ClientConnection
        /// The WebSocket protocol runs: frames may be written (else only bytes already
        /// waiting and what TLS wrote on its own go out).
        let protocolRuns: Bool
        /// Tasks may be let write directly afterwards (open, not talking to a proxy, not dropping).
        let mayOpenDirectWrites: Bool
        let measures: Bool
        let reportsWireEvents: Bool
    }

    /// What a flush did, for the loop to act on.
    struct FlushOutcome {
        /// The socket (or TLS) failed, for this reason: the connection is lost.
        var failure: String?
        /// Bytes or frames wait for room: ask for a writable callback.
        var wantsWritable = false
        /// This side's close frame is whole on the wire.
        var closeFrameWritten = false
        /// A ping or the close frame was taken: the machine's deadlines moved.
        var deadlinesMoved = false
        /// Bytes the kernel took (the loop's spin check).
        var bytesSent = 0
        /// Payload bytes of the messages completed.
        var messageBytesWritten = 0
    }

    /// Writes everything that is waiting, as far as the socket takes it: first bytes an
    /// earlier write left, then frames encoded into the loop's scratch buffer (and through
    /// TLS when there is TLS) and sent from there. What the kernel does not take waits in
    /// ``State/pending`` for the next writable callback. Loop only.
    ///
    /// Holds the lock throughout, so no task writes in between; tasks may write directly
    /// again afterwards only when nothing is left that they could overtake. Senders, the
    /// wire-event observer and the metrics hear of what it did in `effects`, which the
    /// caller carries out once this returns (the lock is released by then).
    func flush(
        _ context: FlushContext, observer: (@Sendable (WebSocketWireEvent) -> Void)?, metrics: ConnectionMetrics?
    ) -> FlushOutcome {
        // The reused effects list and batch, moved out and back (no copy; they keep their capacity).
        var effects = WriteSideEffects()
        var batch = ConnectionStateMachine.WriteBatch()
        swap(&effects, &loopSide.value.effects)
        swap(&batch, &loopSide.value.batch)
        let (outcome, opened) = state.withLock { state in
            var outcome = FlushOutcome()
            state.flush(context, effects: &effects, batch: &batch, outcome: &outcome)
            return (outcome, state.openDirectWrites(context, failed: outcome.failure != nil))
        }
        if opened { loopSide.value.directWritesOpened = true }
        loopSide.value.bytesSent &+= outcome.bytesSent
        // The lock is released: now senders resume, and the observer and metrics hear.
        if !effects.isEmpty { effects.run(observer: observer, metrics: metrics) }
        swap(&effects, &loopSide.value.effects)
        swap(&batch, &loopSide.value.batch)
        return outcome
    }

    /// Sends bytes that are not frames (a proxy's CONNECT or SOCKS5 request, the upgrade
    /// request), through TLS when `tls` is given.
    func sendHandshakeBytes(
        _ bytes: [UInt8], socket: RawSocket, tls: TLSSession?, cipherScratch: UnsafeMutableRawBufferPointer
    ) -> FlushOutcome {
        state.withLock { state in
            var outcome = FlushOutcome()
            bytes.withUnsafeBytes { bytes in
                if let tls {
                    guard tls.writePlaintext(bytes) else {
                        outcome.failure = "TLS refused to encrypt"
                        return
                    }
                    state.sendCiphertext(of: tls, socket: socket, scratch: cipherScratch, outcome: &outcome)
                } else {
                    state.sendOrKeep(bytes, socket: socket, outcome: &outcome)
                }
            }
            loopSide.value.bytesSent &+= outcome.bytesSent
            return outcome
        }
    }

    /// Moves what TLS wrote on its own (its handshake, an alert) to the socket.
    func sendCiphertext(of tls: TLSSession, socket: RawSocket, cipherScratch: UnsafeMutableRawBufferPointer) -> FlushOutcome {
        state.withLock { state in
            var outcome = FlushOutcome()
            state.sendCiphertext(of: tls, socket: socket, scratch: cipherScratch, outcome: &outcome)
            loopSide.value.bytesSent &+= outcome.bytesSent
            return outcome
        }
    }
}

extension WriteSide.State {
    fileprivate mutating func flush(
        _ context: WriteSide.FlushContext, effects: inout WriteSideEffects,
        batch: inout ConnectionStateMachine.WriteBatch, outcome: inout WriteSide.FlushOutcome
    ) {
        if let failure {
            self.failure = nil
            outcome.failure = failure
            return
        }
        guard drainPending(context.socket, outcome: &outcome) else { return }
        if context.protocolRuns {
            var budget = WriteSide.flushBudget
            let messageBytesBefore = frames.messageBytesWritten
            while budget > 0 {
                take(from: context, effects: &effects, batch: &batch, outcome: &outcome)
                let count = frames.fill(context.scratch)
                guard count > 0 else { break }
                budget -= count
                let encoded = UnsafeRawBufferPointer(rebasing: context.scratch[..<count])
                if let tls = context.tls {
                    guard encrypt(encoded, with: tls, socket: context.socket) else {
                        outcome.failure = "TLS refused to encrypt"
                        return
                    }
                    sendCiphertext(of: tls, socket: context.socket, scratch: context.cipherScratch, outcome: &outcome)
                } else {
                    recordFill(startingAt: streamBytes, socket: context.socket)
                    sendOrKeep(encoded, socket: context.socket, outcome: &outcome)
                }
                if outcome.failure != nil || !pending.isEmpty { break }
            }
            // Once a close frame is queued nothing more is taken from the machine: what it
            // still holds never goes out, and asking for writability for it would spin.
            if frames.hasWork || (!frames.isClosing && context.connection.machine.withLock({ $0.hasPendingWrites })) {
                outcome.wantsWritable = true
            }
            outcome.messageBytesWritten = frames.messageBytesWritten - messageBytesBefore
            if context.measures { effects.wrote(frames.takeWrittenTally()) }
            outcome.closeFrameWritten = frames.closeWritten && pending.isEmpty
        }
        // What TLS wrote on its own (a close_notify, a key update, an alert) goes out too.
        if let tls = context.tls, outcome.failure == nil {
            sendCiphertext(of: tls, socket: context.socket, scratch: context.cipherScratch, outcome: &outcome)
        }
    }

    /// Lets tasks write directly, or not: only while nothing is queued, half written or
    /// waiting for room that a direct write could overtake (TLS records included), and
    /// never once a close frame is with the writer. Returns whether they may.
    fileprivate mutating func openDirectWrites(_ context: WriteSide.FlushContext, failed: Bool) -> Bool {
        guard context.protocolRuns, context.mayOpenDirectWrites, !failed, pending.isEmpty, !frames.hasWork,
              !frames.isClosing, (context.tls?.pendingCiphertextCount ?? 0) == 0
        else {
            closeDirectWrites()
            return false
        }
        direct.descriptor = context.socket.descriptor
        direct.tls = context.tls
        direct.largestCompressiblePayloadNow = frames.compresses
            ? min(frames.compressionThreshold - 1, DirectWriter.largestPayload) : DirectWriter.largestPayload
        return true
    }

    /// Takes messages, pings and the close frame from the state machine into the writer.
    private mutating func take(
        from context: WriteSide.FlushContext, effects: inout WriteSideEffects,
        batch: inout ConnectionStateMachine.WriteBatch, outcome: inout WriteSide.FlushOutcome
    ) {
        guard frames.wantsMessages else { return }
        defer { batch.removeAll() }
        let measures = context.measures
        let sendQueueChange = context.connection.machine.withLock { machine in
            machine.takeWrites(budget: WriteSide.flushBudget, into: &batch, now: .now)
            return measures ? machine.takeSendQueueChange() : 0
        }
        if sendQueueChange != 0 { effects.sendQueueChanged(by: sendQueueChange) }
        if !batch.admitted.isEmpty { effects.resume(batch.admitted) }
        for (id, chosen) in batch.pings {
            frames.enqueueControl(.ping, payload: chosen ?? Keepalive.payload(tag: .user, id: id))
            if context.reportsWireEvents { effects.report(.pingSent(keepalive: false)) }
            outcome.deadlinesMoved = true
        }
        for message in batch.messages { frames.enqueue(message) }
        if let close = batch.close {
            frames.enqueueClose(close)
            outcome.deadlinesMoved = true
        }
    }

    /// Encrypts one fill of the frame writer, a record at a time, and records each message
    /// it completed (and its close frame) as ending where the record that carried its last
    /// byte ends: the peer can read none of a record before all of it arrives.
    private mutating func encrypt(_ encoded: UnsafeRawBufferPointer, with tls: TLSSession, socket: RawSocket) -> Bool {
        let completed = frames.completedInFill
        var next = 0
        var start = 0
        while start < encoded.count {
            let end = min(encoded.count, start + WriteSide.tlsRecordPlaintext)
            guard tls.writePlaintext(UnsafeRawBufferPointer(rebasing: encoded[start..<end])) else { return false }
            let recordEnd = streamBytes + tls.pendingCiphertextCount
            if let closeEnd = frames.closeEndInFill, closeEnd > start, closeEnd <= end { closeFrameStreamEnd = recordEnd }
            while tracksDelivery, next < completed.count, completed[next].end <= end {
                ledger.record(completed[next].message, endingAt: recordEnd)
                next += 1
            }
            start = end
        }
        forgetAcknowledged(on: socket.descriptor)
        return true
    }

    /// Records the messages the latest fill completed, and its close frame, at the stream
    /// offsets they end at: the fill's output goes to the socket from `start` on.
    private mutating func recordFill(startingAt start: Int, socket: RawSocket) {
        if let closeEnd = frames.closeEndInFill { closeFrameStreamEnd = start + closeEnd }
        guard tracksDelivery else { return }
        for (end, message) in frames.completedInFill {
            ledger.record(message, endingAt: start + end)
        }
        forgetAcknowledged(on: socket.descriptor)
    }

    /// Forgets the messages the peer acknowledged, once enough have gathered in the ledger
    /// to be worth a look at `descriptor`'s count (the loop's records and the tasks' alike).
    mutating func forgetAcknowledged(on descriptor: Int32) {
        guard ledger.needsPruning, let acknowledged = RawSocket.acknowledgedByteCount(of: descriptor) else { return }
        ledger.forget(acknowledged: acknowledged)
    }

    /// Moves what TLS has encrypted to the socket.
    fileprivate mutating func sendCiphertext(
        of tls: TLSSession, socket: RawSocket, scratch: UnsafeMutableRawBufferPointer, outcome: inout WriteSide.FlushOutcome
    ) {
        while tls.pendingCiphertextCount > 0, outcome.failure == nil {
            let count = tls.takeCiphertext(into: scratch)
            guard count > 0 else { break }
            sendOrKeep(UnsafeRawBufferPointer(rebasing: scratch[..<count]), socket: socket, outcome: &outcome)
        }
    }

    /// Sends `bytes` now if nothing is waiting before them, keeping what the socket does
    /// not take; else queues them all behind what waits.
    fileprivate mutating func sendOrKeep(_ bytes: UnsafeRawBufferPointer, socket: RawSocket, outcome: inout WriteSide.FlushOutcome) {
        streamBytes += bytes.count
        guard pending.isEmpty else {
            pending.append(bytes)
            return
        }
        switch socket.send(bytes) {
        case .sent:
            outcome.bytesSent &+= bytes.count
        case .partial(let count):
            outcome.bytesSent &+= count
            pending.append(UnsafeRawBufferPointer(rebasing: bytes[count...]))
            outcome.wantsWritable = true
        case .failed(let code):
            outcome.failure = String(cString: strerror(code))
        }
    }

    /// Sends what an earlier write left; `false` while some remains (writable wanted).
    private mutating func drainPending(_ socket: RawSocket, outcome: inout WriteSide.FlushOutcome) -> Bool {
        guard !pending.isEmpty else { return true }
        var failure: Int32?
        var sent = 0
        pending.drain { bytes in
            switch socket.send(bytes) {
            case .sent:
                sent = bytes.count
            case .partial(let count):
                sent = count
            case .failed(let code):
                failure = code
                sent = 0
            }
            return sent
        }
        outcome.bytesSent &+= sent
        if let failure {
            outcome.failure = String(cString: strerror(failure))
            return false
        }
        if !pending.isEmpty {
            outcome.wantsWritable = true
            return false
        }
        return true
    }
}
