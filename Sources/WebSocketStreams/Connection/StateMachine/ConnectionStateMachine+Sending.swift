import WebSocketCore

extension ConnectionStateMachine {
    enum SendAction {
        case accepted(wake: Bool)
        case mustWait
        case fail(WebSocketError)
    }

    mutating func send(_ message: OutgoingMessage) -> SendAction {
        guard isOpen else { return .fail(closedError) }
        if outbound.mustWait(message) { return .mustWait }
        outbound.append(message)
        return .accepted(wake: request(.write))
    }

    /// The loop sends `message` of its own (the application heartbeat): queued after what
    /// users sent, whatever the queue's limit (one per heartbeat interval). Returns whether
    /// it was queued (`false` once the connection is no longer open); the loop then flushes
    /// at once. No service is requested: that would mark the loop as already asked to
    /// come, and a later user request (a close) would not wake it.
    mutating func sendFromLoop(_ message: WebSocketMessage) -> Bool {
        guard isOpen else { return false }
        outbound.appendFromLoop(OutgoingMessage(message: message))
        return true
    }

    /// Whether a `send` may write its message to the socket itself (``DirectWriter``):
    /// the connection is open and nothing accepted earlier waits to be written before it.
    /// Received messages waiting for the consumer say a pipeline is busy: the send is
    /// queued then, so the loop writes its answers in batches.
    var mayWriteDirectly: Bool {
        isOpen && outbound.isEmpty && outbound.parkedCount == 0 && inbound.isEmpty && !outbound.isHeldByStream
    }

    /// A direct write left bytes (or an error) for the loop; returns whether to wake it.
    mutating func requestWritePass() -> Bool {
        request(.write)
    }

    enum ParkAction {
        case parked
        case resume(OutboundQueue.Sender, wake: Bool)
        case fail(OutboundQueue.Sender, any Error)
    }

    mutating func park(
        sender id: UInt64, message: OutgoingMessage, continuation: OutboundQueue.Sender
    ) -> ParkAction {
        guard isOpen else { return .fail(continuation, closedError) }
        switch outbound.park(id: id, message: message, continuation: continuation) {
        case .parked: return .parked
        case .cancelled: return .fail(continuation, CancellationError())
        case .accepted: return .resume(continuation, wake: request(.write))
        }
    }

    mutating func cancelSender(id: UInt64) -> OutboundQueue.Sender? {
        outbound.cancel(id: id)
    }

    mutating func senderFinished(id: UInt64) {
        outbound.forgetCancellation(id: id)
    }

    /// Senders parked for room will never get it once the connection is closing.
    mutating func takeParkedSendersIfClosing() -> [OutboundQueue.Sender] {
        isOpen ? [] : outbound.takeParkedSenders()
    }

    /// What the loop writes on one writable pass.
    struct WriteBatch {
        var messages: [OutgoingMessage] = []
        /// Pings to write: the user's (with their payload) and keep-alive's.
        var pings: [(id: UInt64, payload: [UInt8]?)] = []
        var close: CloseFrame?
        var admitted: [OutboundQueue.Sender] = []

        /// Empties the batch, keeping its storage for the next one.
        mutating func removeAll() {
            messages.removeAll(keepingCapacity: true)
            pings.removeAll(keepingCapacity: true)
            admitted.removeAll(keepingCapacity: true)
            close = nil
        }
    }

    /// Takes what to write next: the next `ping()` (one ping is in flight at a time), then
    /// messages up to `budget` bytes, then this side's close frame once no message is left.
    mutating func takeWrites(
        budget: Int, into batch: inout WriteBatch, now: @autoclosure () -> ContinuousClock.Instant
    ) {
        if keepalive?.mayPing ?? true, let index = pings.waiting.firstIndex(where: { $0.writtenAt == nil }) {
            let now = now()
            pings.waiting[index].writtenAt = now
            let ping = pings.waiting[index]
            keepalive?.pingSent(tag: .user, id: ping.id, payload: ping.payload, at: now)
            batch.pings.append((ping.id, ping.payload))
        }
        if stage == .closing, case .closing(let closing) = state, let local = closing.local, local.progress != .queued {
            // This side's close frame is with the writer: no message may follow it
            // (RFC 6455 5.5.1); what is still queued is reported unsent at the end.
            return
        }
        outbound.take(budget: budget, into: &batch.messages, admitted: &batch.admitted)
        guard outbound.isEmpty, stage == .closing, case .closing(var closing) = state, var local = closing.local, local.progress == .queued
        else { return }
        local.progress = .taken
        closing.local = local
        if closing.initiator == nil { closing.initiator = .local }
        if closing.deadline == nil { closing.deadline = now() + timing.closeTimeout }
        state = .closing(closing)
        batch.close = local.frame
    }

    /// Whether writes are waiting (asked after a writable pass); pings count only when
    /// one may be sent now.
    var hasPendingWrites: Bool {
        if !outbound.isEmpty { return true }
        if stage == .closing, case .closing(let closing) = state, closing.local?.progress == .queued { return true }
        return (keepalive?.mayPing ?? true) && pings.waiting.contains { $0.writtenAt == nil }
    }

    /// Bytes accepted and not yet handed to the writer, and senders waiting for room.
    var sendBacklog: (bytes: Int, parkedSenders: Int) { (outbound.bytes, outbound.parkedCount) }

    /// Bytes of messages accepted by `send` that the loop has not taken for writing yet.
    var queuedSendBytes: Int { outbound.bytes }

    /// How many bytes the send queue grew (negative: shrank) since the last call: the
    /// metrics follow it once per loop pass, not once per `send`.
    mutating func takeSendQueueChange() -> Int {
        outbound.takeSizeChange()
    }

    // MARK: - Pings

    enum PingAction {
        case wait(wake: Bool)
        case fail(PingWaiter, any Error)
    }

    /// `ping()` waits for the pong of ping `id`.
    mutating func ping(id: UInt64, payload: [UInt8]? = nil, waiter: PingWaiter) -> PingAction {
        if pings.cancelled.remove(id) != nil { return .fail(waiter, CancellationError()) }
        guard isOpen else { return .fail(waiter, closedError) }
        pings.waiting.append(PendingPings.Ping(id: id, payload: payload, waiter: waiter))
        return .wait(wake: request(.write))
    }

    /// The task waiting for ping `id` was cancelled: its waiter, if it was registered.
    mutating func cancelPing(id: UInt64) -> PingWaiter? {
        if let index = pings.waiting.firstIndex(where: { $0.id == id }) {
            return pings.waiting.remove(at: index).waiter
        }
        pings.cancelled.insert(id)
        return nil
    }

    /// Forgets a cancellation mark of a ping that finished.
    mutating func pingFinished(id: UInt64) {
        pings.cancelled.remove(id)
    }
}
