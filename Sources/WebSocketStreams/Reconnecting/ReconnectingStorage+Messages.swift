import DequeModule
import SynchronizationSupport

extension ReconnectingStorage {
    // MARK: - Sending

    /// Sends on the open connection, or queues until one is open and `onConnect` has run.
    func send(_ message: WebSocketMessage, options: SendOptions = .default) async throws {
        startIfNeeded()
        // Fast path: set up and nothing queued ahead, so straight to the connection.
        let direct: ClientConnection? = shared.withLock { shared in
            guard shared.onConnectFinished, shared.outbox.queue.isEmpty, shared.ending.error == nil else { return nil }
            return shared.current?.connection
        }
        if let direct {
            do {
                try await direct.send(message, options: options)
                return
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // The connection is closing: the message waits for the next one.
            }
        }
        try await enqueue(message, options: options)
    }

    /// Queues without waiting: the message goes out in order with everything else.
    func enqueueWithoutWaiting(_ message: WebSocketMessage) throws {
        startIfNeeded()
        let pump: (UnsafeContinuation<QueuedMessage?, Never>, QueuedMessage)? = try shared.withLock { shared in
            if let endError = shared.ending.error { throw endError }
            let policy = shared.machine.policy
            let size = message.byteCount
            if shared.outbox.queue.count >= policy.maxQueuedMessages
                || (shared.outbox.queuedBytes > 0 && shared.outbox.queuedBytes + size > policy.maxQueuedBytes) {
                throw WebSocketError.sendQueueFull(messages: shared.outbox.queue.count, bytes: shared.outbox.queuedBytes)
            }
            shared.outbox.nextSendID += 1
            let item = QueuedMessage(id: shared.outbox.nextSendID, message: message, sender: nil)
            if let pump = shared.outbox.pumpWaiter {
                shared.outbox.pumpWaiter = nil
                return (pump, item)
            }
            shared.outbox.queue.append(item)
            shared.outbox.queuedBytes += size
            return nil
        }
        if let (waiter, item) = pump { waiter.resume(returning: item) }
    }

    /// Messages waiting for a connection; for tests.
    var queuedCount: Int { shared.withLock { $0.outbox.queue.count } }

    private enum EnqueueOutcome {
        case queued
        case handedToPump(UnsafeContinuation<QueuedMessage?, Never>, QueuedMessage)
        case fail(any Error)
    }

    private func enqueue(_ message: WebSocketMessage, options: SendOptions) async throws {
        let id = shared.withLock { shared in
            shared.outbox.nextSendID += 1
            return shared.outbox.nextSendID
        }
        defer { shared.withLock { _ = $0.outbox.cancelledSends.remove(id) } }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: Sender) in
                let outcome: EnqueueOutcome = shared.withLock { shared in
                    if let endError = shared.ending.error { return .fail(endError) }
                    if shared.outbox.cancelledSends.contains(id) { return .fail(CancellationError()) }
                    let policy = shared.machine.policy
                    let size = message.byteCount
                    if shared.outbox.queue.count >= policy.maxQueuedMessages
                        || (shared.outbox.queuedBytes > 0 && shared.outbox.queuedBytes + size > policy.maxQueuedBytes) {
                        return .fail(WebSocketError.sendQueueFull(messages: shared.outbox.queue.count, bytes: shared.outbox.queuedBytes))
                    }
                    let item = QueuedMessage(id: id, message: message, options: options, sender: continuation)
                    if let pump = shared.outbox.pumpWaiter {
                        // A waiting pump means the queue is empty: hand the message straight over.
                        shared.outbox.pumpWaiter = nil
                        return .handedToPump(pump, item)
                    }
                    shared.outbox.queue.append(item)
                    shared.outbox.queuedBytes += size
                    return .queued
                }
                switch outcome {
                case .queued: break
                case .handedToPump(let pump, let item): pump.resume(returning: item)
                case .fail(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            let sender: Sender? = shared.withLock { shared in
                guard let index = shared.outbox.queue.firstIndex(where: { $0.id == id }) else {
                    shared.outbox.cancelledSends.insert(id)
                    return nil
                }
                let item = shared.outbox.queue.remove(at: index)
                shared.outbox.queuedBytes -= item.message.byteCount
                return item.sender
            }
            sender?.resume(throwing: CancellationError())
        }
    }

    // MARK: - Consuming

    /// The next message from the oldest connection that still has one, waiting for a
    /// (re)connection when there is none; `nil` once the socket has ended and every
    /// connection's buffered messages have been read.
    func nextMessage() async -> WebSocketMessage? {
        var unused = Deque<WebSocketMessage>()
        return await nextMessage(batchInto: &unused, batching: false)
    }

    /// Like ``nextMessage()``; with `batching`, the messages buffered behind it on the same
    /// connection move into `batch` (which the caller empties before asking again).
    func nextMessage(batchInto batch: inout Deque<WebSocketMessage>, batching: Bool) async -> WebSocketMessage? {
        startIfNeeded()
        while true {
            enum Step {
                case read(ClientConnection)
                case wait
                case end
            }
            let step: Step = shared.withLock { shared in
                if let first = shared.consumer.readers.first { return .read(first) }
                if shared.machine.isFinished || shared.consumer.isCancelled { return .end }
                return .wait
            }
            switch step {
            case .read(let connection):
                if let message = await connection.next(batchInto: &batch, batching: batching) { return message }
                // That connection has ended and been read to the end.
                shared.withLock { shared in
                    if shared.consumer.readers.first === connection { shared.consumer.readers.removeFirst() }
                }
            case .wait:
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let ready = shared.withLock { shared in
                        if !shared.consumer.readers.isEmpty || shared.machine.isFinished || shared.consumer.isCancelled { return true }
                        shared.consumer.waiters.append(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            case .end:
                if shared.withLock({ $0.consumer.isCancelled }) {
                    // Return only once the close handshake is done, so whoever awaits this
                    // task (a TaskScope switching sessions) sees the connection closed.
                    await waitUntilFinished()
                }
                return nil
            }
        }
    }

    /// The task iterating `messages` was cancelled: end the socket with 1001.
    func consumerCancelled() {
        let readers = shared.withLock { shared in
            shared.consumer.isCancelled = true
            return shared.consumer.readers.elementsAsArray
        }
        requestEnd(.cancelled, code: .goingAway)
        for reader in readers { reader.consumerCancelled() }
    }

    func streamCreated() {
        shared.withLock { $0.consumer.liveStreams += 1 }
    }

    /// A `messages` stream was released: if it had been iterated, its iteration ended
    /// (break, or its task was cancelled) and the socket ends with 1001; if not, the socket
    /// ends only once the handle is gone too.
    func streamReleased(wasIterated: Bool) {
        let end = shared.withLock { shared in
            shared.consumer.liveStreams = max(0, shared.consumer.liveStreams - 1)
            if wasIterated { shared.consumer.isCancelled = true }
            return wasIterated || (shared.consumer.handleReleased && shared.consumer.liveStreams == 0)
        }
        if end { requestEnd(.cancelled, code: .goingAway) }
    }

    /// The `ReconnectingWebSocket` was released (Swift may do so right after its last use,
    /// `socket.messages`): once no stream is left either, nobody can use it and it ends with 1001.
    func handleReleased() {
        let idle = shared.withLock { shared in
            shared.consumer.handleReleased = true
            return shared.consumer.liveStreams == 0
        }
        if idle { requestEnd(.cancelled, code: .goingAway) }
    }
}
