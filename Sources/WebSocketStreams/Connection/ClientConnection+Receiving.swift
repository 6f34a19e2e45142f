import DequeModule
import Glibc
import LibWebSocketsLoop
import Synchronization
import SynchronizationSupport

/// What the consumer of `messages` takes, and the lifetime of its streams.
extension ClientConnection {
    /// The next received message, or `nil` once the connection has ended and the buffer
    /// is empty. Messages queued behind it move into `batch` (the consumer's own buffer,
    /// which it empties before calling again), so a fast stream costs one lock per batch.
    ///
    /// Cancellation of the calling task while it waits ends the stream (and the
    /// connection, with 1001); the handler is only installed when it has to wait, so a
    /// message already buffered costs no status-record bookkeeping.
    nonisolated(nonsending)
    func next(batchInto batch: inout Deque<WebSocketMessage>, batching: Bool = true) async -> WebSocketMessage? {
        let generation = consumerPollNanoseconds > 0 ? receivedGeneration.load(ordering: .acquiring) : 0
        switch machine.withLock({ $0.next(batchInto: &batch, batching: batching) }) {
        case .message(let message, let wake):
            if wake { self.wake() }
            writeSide.noteConsumerTook(waited: false)
            return message
        case .finished:
            return nil
        case .wait:
            break
        }
        // From here on the consumer waits: what it gets came after a quiet spell, and its
        // answer may be written directly (``WriteSide/mayTryDirectWrite(startedAt:)``).
        writeSide.noteConsumerTook(waited: true)
        if consumerPollNanoseconds > 0,
           let taken = pollForMessage(batchInto: &batch, batching: batching, after: generation) {
            return taken
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<WebSocketMessage?, Never>) in
                consumerWaitsOnLoop.store(loopThread.isCurrent, ordering: .relaxed)
                switch machine.withLock({ $0.park(consumer: continuation) }) {
                case .resume(let consumer, let message, let wake):
                    if wake { self.wake() }
                    consumer.resume(returning: message)
                case .parked(let wake):
                    if wake { self.wake() }
                }
            }
        } onCancel: {
            consumerCancelled()
        }
    }

    /// Latency mode, off the loop thread: looks for the next message for at most
    /// ``consumerPollNanoseconds`` before the caller parks, so a message that comes meanwhile
    /// reaches this task without a thread wake-up (the loop resuming a parked task wakes a
    /// pool thread). The machine's lock is taken only when the loop has handed it messages
    /// since `generation` (``receivedGeneration``). `nil` when nothing came in time: park.
    private func pollForMessage(
        batchInto batch: inout Deque<WebSocketMessage>, batching: Bool, after generation: UInt
    ) -> WebSocketMessage?? {
        // A task that prefers an executor of its own (a loop: this one or another) would
        // stall it by polling; on this loop's thread it would stall the very loop it waits for.
        guard !loopThread.isCurrent, withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor }) == nil else { return nil }
        var seen = generation
        let deadline = DirectWriter.monotonicNanoseconds() &+ Int(consumerPollNanoseconds)
        repeat {
            let now = receivedGeneration.load(ordering: .acquiring)
            if now != seen {
                seen = now
                switch machine.withLock({ $0.next(batchInto: &batch, batching: batching) }) {
                case .message(let message, let wake):
                    if wake { self.wake() }
                    return .some(message)
                case .finished:
                    return .some(nil)
                case .wait:
                    break
                }
            }
            // Polite polling: a thread that needs this core (the peer, the loop) gets it.
            sched_yield()
        } while DirectWriter.monotonicNanoseconds() < deadline
        return nil
    }

    /// The next received message, one at a time (for consumers without their own buffer).
    nonisolated(nonsending)
    func next() async -> WebSocketMessage? {
        var unused = Deque<WebSocketMessage>()
        return await next(batchInto: &unused, batching: false)
    }

    /// One message for ``WebSocket/receive()``: the next one, waiting for it. Throws the
    /// connection's error once it has ended and nothing is left, ``WebSocketError/Code/invalidUse``
    /// while another reader takes messages, and `CancellationError` when the task is
    /// cancelled while waiting (the connection stays open then, and no message is lost).
    nonisolated(nonsending)
    func receive() async throws -> WebSocketMessage {
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        guard machine.withLock({ $0.claimReading(by: id) }) else { throw WebSocketError.secondReader }
        defer { machine.withLock { $0.releaseReading(by: id) } }
        try Task.checkCancellation()
        var unused = Deque<WebSocketMessage>()
        let generation = consumerPollNanoseconds > 0 ? receivedGeneration.load(ordering: .acquiring) : 0
        switch machine.withLock({ $0.next(batchInto: &unused, batching: false) }) {
        case .message(let message, let wake):
            if wake { self.wake() }
            writeSide.noteConsumerTook(waited: false)
            return message
        case .finished:
            throw machine.withLock { $0.closedError }
        case .wait:
            break
        }
        writeSide.noteConsumerTook(waited: true)
        if consumerPollNanoseconds > 0, let taken = pollForMessage(batchInto: &unused, batching: false, after: generation) {
            if let taken { return taken }
            throw machine.withLock { $0.closedError }
        }
        let message = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<WebSocketMessage?, Never>) in
                consumerWaitsOnLoop.store(loopThread.isCurrent, ordering: .relaxed)
                switch machine.withLock({ $0.park(consumer: continuation) }) {
                case .resume(let consumer, let message, let wake):
                    if wake { self.wake() }
                    consumer.resume(returning: message)
                case .parked(let wake):
                    if wake { self.wake() }
                }
            }
        } onCancel: {
            for consumer in machine.withLock({ $0.receiveCancelled() }) { consumer.resume(returning: nil) }
        }
        if let message { return message }
        let (closed, error) = machine.withLock { ($0.isClosed, $0.closedError) }
        if !closed, Task.isCancelled { throw CancellationError() }
        throw error
    }

    /// Starts reading for iteration `reader` of `messages`: `false` (and the connection
    /// ends with ``WebSocketError/Code/invalidUse``) when another reader takes messages.
    func claimReading(by reader: UInt64) -> Bool {
        if machine.withLock({ $0.claimReading(by: reader) }) { return true }
        closeFailing(with: .secondReader, code: .internalServerError, reason: "two readers of messages")
        return false
    }

    func releaseReading(by reader: UInt64) {
        machine.withLock { $0.releaseReading(by: reader) }
    }

    /// Ends the connection for `error` (which becomes ``WebSocket/error`` at once), closing with `code`.
    func closeFailing(with error: WebSocketError, code: WebSocketCloseCode, reason: String) {
        let (wake, failedSenders, closedError) = machine.withLock { machine in
            let wake = machine.closeFailing(with: error, code: code, reason: reason)
            return (wake, machine.outbound.takeParkedSenders(), machine.closedError)
        }
        if wake { self.wake() }
        for sender in failedSenders { sender.resume(throwing: closedError) }
    }

    func streamCreated() {
        machine.withLock { $0.streamCreated() }
    }

    func streamReleased(wasIterated: Bool) {
        if machine.withLock({ $0.streamReleased(wasIterated: wasIterated) }) { wake() }
    }

    func consumerCancelled() {
        let (consumers, wake) = machine.withLock { $0.consumerCancelled() }
        if wake { self.wake() }
        for consumer in consumers { consumer.resume(returning: nil) }
    }

    func handleReleased() {
        if machine.withLock({ $0.handleReleased() }) { wake() }
    }
}
