import DequeModule
import LibWebSocketsLoop
import SynchronizationSupport
import WebSocketStreams

/// The bridge between a handler's task and its ``ServerConnection`` on the server's loop
/// thread: the messages received and not yet read, the sends waiting for room, and the
/// connection's ending.
///
/// The loop thread produces (``deliver(_:)``, ``wrote(_:)``, ``clientClosed(code:reason:)``,
/// ``ended()``); the handler's task consumes (``nextMessage()``, ``reserve(_:)``,
/// ``waitForEnd()``). Every continuation is resumed after the lock is released.
final class HandlerLink: Sendable {
    /// Payload bytes the handler may have queued and libwebsockets not yet taken: a slow
    /// client slows the handler's `send` at this depth.
    static let sendLimit = 1 << 20
    /// Received bytes not yet read by the handler at which the server stops reading the
    /// socket (so a client's sends then wait in TCP, as with any slow server), and the depth
    /// at which it reads again.
    static let inboxHighWater = 4 << 20
    static let inboxLowWater = 1 << 20

    /// What a loop-side delivery asks of the connection.
    enum Delivery { case keepReading, pauseReading }

    private struct State {
        var inbox = Deque<WebSocketMessage>()
        var inboxBytes = 0
        var receiver: CheckedContinuation<WebSocketMessage?, Never>?
        /// The reader was cancelled before it registered: its next wait returns at once.
        var receiverCancelled = false
        var pausedForInbox = false
        var queuedBytes = 0
        var senders: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var cancelledSenders = Set<UInt64>()
        var nextSenderID: UInt64 = 0
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
        var closeCode: WebSocketCloseCode?
        var closeReason: String?
    }

    /// The connection's id in the server's record.
    let id: Int
    private let state = AnnotatedMutex(State())
    private let loop: ServerLoop
    private let thread: EventLoopThread

    init(id: Int, loop: ServerLoop, thread: EventLoopThread) {
        self.id = id
        self.loop = loop
        self.thread = thread
    }

    // MARK: - The handler's side

    /// The next message the client sent, or `nil` once the connection ended (or the
    /// calling task was cancelled) and every message was read.
    func nextMessage() async -> WebSocketMessage? {
        // A message already here, or the end: no suspension.
        let ready: (message: WebSocketMessage?, resumeReading: Bool)? = state.withLock { state in
            state.receiverCancelled = false
            guard let message = state.inbox.popFirst() else {
                return state.ended ? (nil, false) : nil
            }
            state.inboxBytes -= message.byteCount
            return (message, takeResumeReading(&state))
        }
        if let ready {
            if ready.resumeReading { resumeReadingForInbox() }
            return ready.message
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WebSocketMessage?, Never>) in
                let ready: (WebSocketMessage?, Bool)? = state.withLock { state in
                    // A second reader while one waits gets the end at once: one task reads.
                    if state.receiverCancelled || state.receiver != nil || state.ended && state.inbox.isEmpty {
                        return (nil, false)
                    }
                    if let message = state.inbox.popFirst() {
                        state.inboxBytes -= message.byteCount
                        return (message, takeResumeReading(&state))
                    }
                    state.receiver = continuation
                    return nil
                }
                if let (message, resumeReading) = ready {
                    if resumeReading { resumeReadingForInbox() }
                    continuation.resume(returning: message)
                }
            }
        } onCancel: {
            let receiver = state.withLock { state in
                defer { state.receiver = nil }
                if state.receiver == nil { state.receiverCancelled = true }
                return state.receiver
            }
            receiver?.resume(returning: nil)
        }
    }

    private func resumeReadingForInbox() {
        onLoop { connection, wsi in connection.setReading(paused: false, for: .handlerInbox, wsi) }
    }

    /// Whether the server paused reading for the inbox and it has drained enough to read again.
    private func takeResumeReading(_ state: inout State) -> Bool {
        guard state.pausedForInbox, state.inboxBytes <= Self.inboxLowWater else { return false }
        state.pausedForInbox = false
        return true
    }

    /// Waits until `byteCount` more bytes may be queued, and counts them as queued.
    ///
    /// - Throws: ``TestServerError/connectionEnded(_:)`` once the connection ended;
    ///   `CancellationError` when the task is cancelled while waiting.
    func reserve(_ byteCount: Int) async throws {
        while true {
            let (senderID, outcome): (UInt64, Bool?) = state.withLock { state in
                if state.ended { return (0, false) }
                if state.queuedBytes == 0 || state.queuedBytes + byteCount <= Self.sendLimit {
                    state.queuedBytes += byteCount
                    return (0, true)
                }
                state.nextSenderID += 1
                return (state.nextSenderID, nil)
            }
            switch outcome {
            case true?: return
            case false?: throw TestServerError.connectionEnded(id)
            case nil: break
            }
            try Task.checkCancellation()
            let stillOpen = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let answer: Bool? = state.withLock { state in
                        if state.cancelledSenders.remove(senderID) != nil { return false }
                        if state.ended { return false }
                        // The same room rule as above: an empty queue takes any message.
                        if state.queuedBytes == 0 || state.queuedBytes + byteCount <= Self.sendLimit { return true }
                        state.senders[senderID] = continuation
                        return nil
                    }
                    if let answer { continuation.resume(returning: answer) }
                }
            } onCancel: {
                let sender = state.withLock { state in
                    guard let sender = state.senders.removeValue(forKey: senderID) else {
                        state.cancelledSenders.insert(senderID)
                        return CheckedContinuation<Bool, Never>?.none
                    }
                    return sender
                }
                sender?.resume(returning: false)
            }
            try Task.checkCancellation()
            if !stillOpen { throw TestServerError.connectionEnded(id) }
        }
    }

    /// Suspends until the connection has ended.
    func waitForEnd() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state in
                if !state.ended { state.endWaiters.append(continuation) }
                return state.ended
            }
            if ended { continuation.resume() }
        }
    }

    /// Whether the connection has ended.
    var hasEnded: Bool { state.withLock { $0.ended } }

    /// The client's close code and reason, once its close frame arrived.
    var clientClose: (code: WebSocketCloseCode?, reason: String?) {
        state.withLock { ($0.closeCode, $0.closeReason) }
    }

    /// Runs `body` with the connection on the server's loop thread; `false` when the
    /// connection or the server is gone (the connection is then marked ended).
    @discardableResult
    func onLoop(_ body: @escaping @Sendable (ServerConnection, OpaquePointer) -> Void) -> Bool {
        let posted = thread.post(LoopClosure { [loop, id] in
            if let (connection, wsi) = loop.handlerConnection(id) { body(connection, wsi) }
        })
        if !posted { ended() }
        return posted
    }

    // MARK: - The loop thread's side

    /// A whole message arrived from the client.
    func deliver(_ message: WebSocketMessage) -> Delivery {
        let (receiver, pause): (CheckedContinuation<WebSocketMessage?, Never>?, Bool) = state.withLock { state in
            if let receiver = state.receiver {
                state.receiver = nil
                return (receiver, false)
            }
            state.inbox.append(message)
            state.inboxBytes += message.byteCount
            guard !state.pausedForInbox, state.inboxBytes > Self.inboxHighWater else { return (nil, false) }
            state.pausedForInbox = true
            return (nil, true)
        }
        receiver?.resume(returning: message)
        return pause ? .pauseReading : .keepReading
    }

    /// libwebsockets took `byteCount` queued payload bytes: senders waiting for room may go on.
    func wrote(_ byteCount: Int) {
        let ready: [CheckedContinuation<Bool, Never>] = state.withLock { state in
            state.queuedBytes = max(0, state.queuedBytes - byteCount)
            guard state.queuedBytes < Self.sendLimit, !state.senders.isEmpty else { return [] }
            defer { state.senders = [:] }
            return Array(state.senders.values)
        }
        // Each woken sender checks the room again.
        for sender in ready { sender.resume(returning: true) }
    }

    /// The client's close frame arrived.
    func clientClosed(code: WebSocketCloseCode?, reason: String) {
        state.withLock { state in
            state.closeCode = code
            state.closeReason = reason
        }
    }

    /// The connection ended: the inbox finishes once read, waiting senders fail.
    func ended() {
        let (receiver, senders, endWaiters) = state.withLock { state in
            guard !state.ended else {
                return (CheckedContinuation<WebSocketMessage?, Never>?.none, [CheckedContinuation<Bool, Never>](), [CheckedContinuation<Void, Never>]())
            }
            state.ended = true
            defer {
                state.receiver = nil
                state.senders = [:]
                state.endWaiters = []
            }
            return (state.receiver, Array(state.senders.values), state.endWaiters)
        }
        receiver?.resume(returning: nil)
        for sender in senders { sender.resume(returning: false) }
        for waiter in endWaiters { waiter.resume() }
    }
}
