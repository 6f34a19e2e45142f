import DequeModule
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
        switch machine.withLock({ $0.next(batchInto: &batch, batching: batching) }) {
        case .message(let message, let wake):
            if wake { self.wake() }
            return message
        case .finished:
            return nil
        case .wait:
            break
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<WebSocketMessage?, Never>) in
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

    /// The next received message, one at a time (for consumers without their own buffer).
    nonisolated(nonsending)
    func next() async -> WebSocketMessage? {
        var unused = Deque<WebSocketMessage>()
        return await next(batchInto: &unused, batching: false)
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
