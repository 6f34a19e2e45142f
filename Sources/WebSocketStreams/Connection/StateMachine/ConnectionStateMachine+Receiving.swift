import DequeModule
import WebSocketCore

extension ConnectionStateMachine {
    enum ReceiveAction {
        case deliver(InboundQueue.Consumer, WebSocketMessage)
        case none
        case pauseReading
    }

    /// A whole message arrived.
    mutating func receive(_ message: WebSocketMessage) -> ReceiveAction {
        // Closing with the buffer full: reading goes on (for the peer's close answer) but
        // what else arrives is dropped, as RFC 6455 allows once a close frame has been
        // sent or received, so a peer that keeps sending cannot grow the buffer.
        if !isOpen, inbound.isFull { return .none }
        switch inbound.receive(message) {
        case .deliver(let waiter):
            consumer.isHoldingMessages = true
            return .deliver(waiter, message)
        case .buffered: return .none
        // Closing: the peer's close answer must get in even if the consumer fell behind
        // (or left); the close timeout bounds what can pile up before it.
        case .bufferedPauseReading: return isOpen ? .pauseReading : .none
        }
    }

    /// Several whole messages arrived in one read: waiting consumers take the first ones
    /// (added to `deliveries`), the rest are buffered; one lock for all of them. Returns
    /// whether reading must pause (the consumer's buffer is full): keep-alive stops
    /// expecting pongs then, since none can be read.
    mutating func receive(
        contentsOf batch: [WebSocketMessage], deliveries: inout [(InboundQueue.Consumer, WebSocketMessage)],
        now: @autoclosure () -> ContinuousClock.Instant? = nil
    ) -> Bool {
        if keepalive?.wantsReceiveTimes == true, let now = now() { keepalive?.dataReceived(at: now) }
        var pause = false
        for message in batch {
            switch receive(message) {
            case .deliver(let consumer, let message): deliveries.append((consumer, message))
            case .pauseReading: pause = true
            case .none: break
            }
        }
        if pause {
            keepalive?.pause()
            heartbeat?.pause()
        }
        return pause
    }

    /// A reply to the application heartbeat arrived.
    mutating func heartbeatReplied(now: ContinuousClock.Instant) {
        heartbeat?.replyReceived(at: now)
    }

    /// Received messages waiting for the consumer.
    var bufferedMessageCount: Int { inbound.count }

    /// The most bytes the inbound queue ever held (``InboundQueue/peakBytes``).
    var inboundPeakBytes: Int { inbound.peakBytes }

    /// How many messages (and bytes) the consumer's buffer takes before reading pauses.
    var inboundRoom: (messages: Int, bytes: Int) { isOpen ? inbound.room : (.max, .max) }

    /// Bytes are about to be read: how many messages (and bytes) the consumer's buffer
    /// takes before reading pauses. While lingering after the close frames, a peer still
    /// sending is still finishing: the drop waits a little longer (`deadlineMoved`), up to
    /// the linger limit.
    mutating func roomForRead(
        now: @autoclosure () -> ContinuousClock.Instant
    ) -> (messages: Int, bytes: Int, deadlineMoved: Bool) {
        if stage == .open { return (inbound.room.messages, inbound.room.bytes, false) }
        guard stage == .closing, case .closing(let closing) = state, let limit = closing.lingerLimit else { return (.max, .max, false) }
        moveCloseDeadline(.lingerAgain(upTo: limit), now: now())
        return (.max, .max, true)
    }

    /// Reading resumed (the consumer caught up); `false` while a broken rule waits for
    /// the consumer, which keeps reading paused. Pong deadlines run again from `now`.
    mutating func readingResumed(now: ContinuousClock.Instant) -> Bool {
        guard deferredFailure == nil else { return false }
        keepalive?.resume(at: now)
        heartbeat?.resume(at: now)
        return true
    }

    /// The peer pinged: the pong to answer with (RFC 6455 5.5.2), unless this side's close
    /// frame is already on the wire.
    func pongAnswering(_ payload: [UInt8]) -> [UInt8]? {
        if stage == .closing, case .closing(let closing) = state, closing.closeWritten { return nil }
        return payload
    }

    /// A pong arrived: the round trip of the ping it answers, and the `ping()` waiting for
    /// it (`nil` for keep-alive's own pings); `nil` when it answers no ping in flight.
    mutating func pongReceived(
        _ payload: [UInt8], at now: ContinuousClock.Instant
    ) -> (roundTrip: Duration, waiter: (PingWaiter, Duration)?)? {
        guard let (ping, roundTrip) = keepalive?.pongReceived(payload, at: now) else { return nil }
        guard ping.tag == .user, let index = pings.waiting.firstIndex(where: { $0.id == ping.id }),
              let writtenAt = pings.waiting[index].writtenAt
        else { return (roundTrip, nil) }
        let waiting = pings.waiting.remove(at: index)
        return (roundTrip, waiting.waiter.map { ($0, now - writtenAt) })
    }

    // MARK: - The consumer

    enum NextAction {
        case message(WebSocketMessage, wake: Bool)
        case finished
        case wait
    }

    /// The consumer wants the next message.
    mutating func next() -> NextAction {
        switch inbound.next() {
        case .message(let message, let resumeReading):
            consumer.isHoldingMessages = true
            let wake = resumeReading && !isClosed ? request(.resumeReading) : false
            return .message(message, wake: wake)
        case .wait:
            consumer.isHoldingMessages = false
            return isClosed ? .finished : .wait
        }
    }

    /// Like ``next()``, and also moves a batch of the messages buffered behind it into the
    /// consumer's own buffer, so the consumer takes the lock once per batch.
    /// `batching: false` takes just the one message.
    mutating func next(batchInto buffer: inout Deque<WebSocketMessage>, batching: Bool = true) -> NextAction {
        switch inbound.next() {
        case .message(let message, let resumeReading):
            let limit = batching ? inbound.consumerBatchLimit - 1 : 0
            let resumeAfterBatch = limit > 0 ? inbound.take(into: &buffer, limit: limit) : false
            consumer.isHoldingMessages = true
            let wake = (resumeReading || resumeAfterBatch) && !isClosed ? request(.resumeReading) : false
            return .message(message, wake: wake)
        case .wait:
            consumer.isHoldingMessages = false
            return isClosed ? .finished : .wait
        }
    }

    enum ParkConsumerAction {
        case resume(InboundQueue.Consumer, with: WebSocketMessage?, wake: Bool)
        case parked(wake: Bool)
    }

    /// Parks the consumer; resumes it at once when a message or the end arrived meanwhile.
    /// A consumer that parks has finished every message before a held failure: that
    /// failure is applied now (`wake`).
    mutating func park(consumer waiter: InboundQueue.Consumer) -> ParkConsumerAction {
        switch next() {
        case .message(let message, let wake): return .resume(waiter, with: message, wake: wake)
        case .finished: return .resume(waiter, with: nil, wake: false)
        case .wait:
            if consumer.isCancelled || consumer.isReceiveCancelled { return .resume(waiter, with: nil, wake: false) }
            inbound.park(waiter)
            guard deferredFailure != nil else { return .parked(wake: false) }
            return .parked(wake: request(.applyDeferredFailure))
        }
    }

    // MARK: - Broken rules

    enum FailureAction {
        /// Fail the connection now.
        case fail(Failing)
        /// Held until the consumer finishes the messages before it: pause reading, arm the timer.
        case deferred
    }

    /// A frame broke a rule. RFC 6455 lets an endpoint fail at once, but when the broken
    /// rule came right behind messages the consumer has not finished with (buffered, or
    /// handed over and still being handled), a reply to them (an echo, an acknowledgement)
    /// would never go out. So the failure is held until the consumer comes back for more,
    /// or ``Timing/deferredFailureGrace`` passes; nothing more is read meanwhile.
    mutating func protocolFailure(_ failure: ProtocolFailure, now: ContinuousClock.Instant) -> FailureAction {
        guard inbound.count > 0 || consumer.isHoldingMessages else { return .fail(fail(failure, now: now)) }
        deferredFailure = (failure, now + timing.deferredFailureGrace)
        keepalive?.pause()
        heartbeat?.pause()
        return .deferred
    }

    /// Applies a failure held by ``protocolFailure(_:now:)``; `nil` when none is held. What
    /// the consumer sent while it was held goes out before the close frame.
    mutating func applyDeferredFailure(now: ContinuousClock.Instant) -> Failing? {
        guard let (failure, _) = deferredFailure else { return nil }
        deferredFailure = nil
        return fail(failure, now: now, behindQueuedMessages: true)
    }
}
