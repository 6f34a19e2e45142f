import LibWebSocketsLoop
import DequeModule
import Logging
import Synchronization
import SynchronizationSupport

/// The internal core of one client connection.
///
/// It holds the ``ConnectionStateMachine`` behind one lock, shared by the user's tasks
/// and the loop thread, and the ``ClientTransport`` that only the loop thread
/// touches. User operations take the lock, get an action back, release the lock and
/// then resume continuations or wake the loop: nothing is resumed, awaited or called
/// out to while the lock is held.
///
/// The core posts *itself* to the loop when it needs service, so the hot paths
/// (send, consume) allocate nothing to cross threads, and a burst of sends costs one wake-up.
final class ClientConnection: LoopWork {
    let url: WebSocketURL
    /// The configuration, shared with the transport.
    private let sharedConfiguration: SharedConfiguration
    var configuration: WebSocketConfiguration { sharedConfiguration.value }
    let logger: Logger
    let transport: ClientTransport
    let machine: AnnotatedMutex<ConnectionStateMachine>
    /// The socket's write side: held by the loop while it flushes, and by a task that
    /// writes its message itself (``DirectWriter``). Taken before ``machine``, never after.
    let writeSide: WriteSide
    /// When the latest `send` returned (``DirectWriter/monotonicNanoseconds()``).
    private let lastSendReturned = Atomic<Int>(0)
    /// How long a sender must have been away before its `send` may write directly, in
    /// nanoseconds (``DirectWriter/burstGap``; tests set 0 to make every send eligible).
    let directWriteGap = Atomic<Int>(DirectWriter.burstGap)
    /// Whether the stream's consumer holds received messages it has not handled yet (set by
    /// ``MessageIteration``): a send then answers one of a batch, and is queued with the rest.
    let consumerHoldsMessages = Atomic<Bool>(false)
    /// Sends that could have been written directly but found the loop writing (tests, diagnostics).
    let directWritesMissed = Atomic<Int>(0)
    private let eventLoop: WebSocketEventLoop
    private let waiterIDs = Atomic<UInt64>(0)
    /// Payload bytes handed to lws so far (written by the loop thread, read by anyone).
    let bytesWritten = Atomic<Int>(0)
    /// The connection's metric handles; `nil` when no metrics backend is there.
    let metrics: ConnectionMetrics?

    init(
        url: WebSocketURL, configuration: WebSocketConfiguration, eventLoop: WebSocketEventLoop,
        target: ConnectTarget, handshakeDeadline: ContinuousClock.Instant, metrics: ConnectionMetrics? = nil
    ) {
        self.metrics = metrics
        self.url = url
        let sharedConfiguration = SharedConfiguration(configuration)
        self.sharedConfiguration = sharedConfiguration
        self.logger = configuration.logger
        self.eventLoop = eventLoop
        machine = AnnotatedMutex(ConnectionStateMachine(configuration: configuration, handshakeDeadline: handshakeDeadline))
        writeSide = WriteSide(loop: eventLoop.thread)
        transport = ClientTransport(configuration: sharedConfiguration, url: url, target: target)
    }

    /// The thread of the loop this connection runs on.
    var loopThread: EventLoopThread { eventLoop.thread }

    // MARK: - Loop entry

    func runOnLoop() {
        transport.isServicing = true
        defer { transport.isServicing = false }
        let (requests, sendQueueChange) = machine.withLock { machine in
            (machine.takeRequests(now: .now), metrics == nil ? 0 : machine.takeSendQueueChange())
        }
        if sendQueueChange != 0 { metrics?.sendQueueChanged(by: sendQueueChange) }
        transport.service(self, requests: requests, loop: eventLoop.connections)
    }

    /// Asks the loop thread to look at this connection: at once when the caller is a
    /// task running on that thread (between lws passes, so lws may be called), else by
    /// posting to it. A wake-up from inside this connection's own service (a user callback
    /// run while it writes, a cancellation handler that callback set off) is posted too:
    /// the service in progress holds the write side, and must finish first.
    func wake() {
        let thread = eventLoop.thread
        // `isServicing` is read on the loop thread only (`isRunningJobsHere` proved it).
        if thread.isRunningJobsHere, !transport.isServicing {
            runOnLoop()
        } else {
            thread.post(self)
        }
    }

    // MARK: - Connecting

    /// Starts the handshake and waits for it. Throws a ``WebSocketError`` or `CancellationError`.
    func connect() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                switch machine.withLock({ $0.awaitConnect(continuation) }) {
                case .resume(let waiter, let error):
                    if let error { waiter.resume(throwing: error) } else { waiter.resume() }
                case .wait:
                    let loop = eventLoop.connections
                    let posted = eventLoop.thread.post(LoopClosure { [self] in loop.open(self) })
                    if !posted {
                        let finale = machine.withLock { $0.connectFailed(.connectionFailed("the event loop has been shut down")) }
                        finale?.run()
                    }
                }
            }
        } onCancel: {
            let (waiter, wake) = machine.withLock { $0.cancelConnect() }
            waiter?.resume(throwing: CancellationError())
            if wake { self.wake() }
        }
    }

    // MARK: - Sending

    nonisolated(nonsending)
    func send(_ message: WebSocketMessage) async throws {
        let started = DirectWriter.monotonicNanoseconds()
        defer { lastSendReturned.store(DirectWriter.monotonicNanoseconds(), ordering: .relaxed) }
        // A send right after the previous one is part of a burst: queued, so the loop writes
        // the burst with one system call instead of one per message.
        if started - lastSendReturned.load(ordering: .relaxed) >= directWriteGap.load(ordering: .relaxed),
           !consumerHoldsMessages.load(ordering: .relaxed), try writeDirectly(message) {
            return
        }
        switch machine.withLock({ $0.send(message) }) {
        case .accepted(let wake):
            if wake { self.wake() }
            return
        case .fail(let error):
            throw error
        case .mustWait:
            break
        }
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        defer { machine.withLock { $0.senderFinished(id: id) } }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                switch machine.withLock({ $0.park(sender: id, message: message, continuation: continuation) }) {
                case .parked:
                    break
                case .resume(let sender, let wake):
                    if wake { self.wake() }
                    sender.resume()
                case .fail(let sender, let error):
                    sender.resume(throwing: error)
                }
            }
        } onCancel: {
            machine.withLock { $0.cancelSender(id: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Writes `message` to the socket on the caller's thread, without waking the loop, when
    /// that cannot reorder anything (see ``DirectWriter``); `false` when it must be queued.
    /// Never waits: a loop that is writing holds the lock, and then the message is queued.
    private func writeDirectly(_ message: WebSocketMessage) throws(WebSocketError) -> Bool {
        guard let outcome = writeSide.writeDirectly(message, machine: machine) else {
            directWritesMissed.add(1, ordering: .relaxed)
            return false
        }
        switch outcome {
        case .notTaken:
            return false
        case .sent:
            wroteDirectly(message)
            return true
        case .partial:
            wroteDirectly(message)
            if machine.withLock({ $0.requestWritePass() }) { wake() }
            return true
        case .failed(let reason):
            // The loop ends the connection; this message is the one that did not go.
            if machine.withLock({ $0.requestWritePass() }) { wake() }
            throw .connectionFailed("write failed: \(reason) (\(transport.target.description))")
        }
    }

    private func wroteDirectly(_ message: WebSocketMessage) {
        bytesWritten.add(message.byteCount, ordering: .relaxed)
        if let metrics {
            var tally = FrameWriter.WrittenTally()
            tally.bytes = message.byteCount
            if case .text = message { tally.textMessages = 1 } else { tally.binaryMessages = 1 }
            metrics.sent(tally)
        }
    }

    // MARK: - Ping

    func ping(payload: [UInt8]? = nil) async throws -> Duration {
        if let payload, payload.count > 125 {
            throw WebSocketError.invalidConfiguration("a ping payload is at most 125 bytes (this one is \(payload.count))")
        }
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        defer { machine.withLock { $0.pingFinished(id: id) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Duration, any Error>) in
                switch machine.withLock({ $0.ping(id: id, payload: payload, waiter: continuation) }) {
                case .wait(let wake):
                    if wake { self.wake() }
                case .fail(let waiter, let error):
                    waiter.resume(throwing: error)
                }
            }
        } onCancel: {
            machine.withLock { $0.cancelPing(id: id) }?.resume(throwing: CancellationError())
        }
    }

    // MARK: - Closing

    func close(code: WebSocketCloseCode, reason: String) async {
        var code = code
        if !code.isValidInCloseFrame {
            logger.error("close code \(code) may not be sent; closing with 1000 instead")
            code = .normalClosure
        }
        let reason = Self.truncatedCloseReason(reason)
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            switch machine.withLock({ $0.close(code: code, reason: reason, waiter: continuation) }) {
            case .done:
                continuation.resume()
            case .wait(let wake, let failedSenders):
                if wake { self.wake() }
                let error = machine.withLock { $0.closedError }
                for sender in failedSenders { sender.resume(throwing: error) }
            }
        }
    }

    /// Waits until the connection has ended, without asking it to close.
    func waitForEnding() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            if !machine.withLock({ $0.awaitEnding(continuation) }) { continuation.resume() }
        }
    }

    /// Asks for a close with `code` and returns at once (a loop shutting down, a
    /// reconnecting wrapper moving on).
    func requestClose(code: WebSocketCloseCode, reason: String = "") {
        let (wake, failedSenders, error) = machine.withLock { machine in
            let result = machine.requestClose(code: code, reason: reason)
            return (result.wake, result.failedSenders, machine.closedError)
        }
        if wake { self.wake() }
        for sender in failedSenders { sender.resume(throwing: error) }
    }

    /// A close reason fits in 123 bytes (a control frame's 125 minus the code); longer
    /// ones are cut at a character boundary.
    static func truncatedCloseReason(_ reason: String) -> String {
        guard reason.utf8.count > 123 else { return reason }
        var result = ""
        for character in reason {
            if result.utf8.count + character.utf8.count > 123 { break }
            result.append(character)
        }
        return result
    }

    // MARK: - Consuming

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

extension ConnectionStateMachine.Finale {
    /// Resumes and fails everything the ended connection still owed. Call without the lock.
    func run() {
        if let connectWaiter {
            connectWaiter.resume(throwing: connectError ?? error)
        }
        for consumer in consumers { consumer.resume(returning: nil) }
        for sender in parkedSenders { sender.resume(throwing: error) }
        for ping in pings { ping.resume(throwing: error) }
        for waiter in closeWaiters { waiter.resume() }
    }
}
