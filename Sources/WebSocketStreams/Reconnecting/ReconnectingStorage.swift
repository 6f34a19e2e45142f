import DequeModule
import SynchronizationSupport

/// The shared state of a ``ReconnectingWebSocket``: the reconnect state machine, the
/// connections the consumer reads from, the send queue, and the state observers, behind
/// one lock. The supervisor (``ReconnectingStorage+Supervisor``) drives connections; the
/// consumer of `messages` reads straight from the current connection, so backpressure
/// reaches the socket with no buffer or thread hop in between.
final class ReconnectingStorage: Sendable {
    typealias State = ReconnectingWebSocket.State
    typealias Sender = UnsafeContinuation<Void, any Error>

    struct QueuedMessage {
        let id: UInt64
        let message: WebSocketMessage
        /// How its `send` asked for it to be sent (``SendOptions/uncompressed`` for a message
        /// re-queued after a drop).
        var options = SendOptions.default
        /// The waiting `send`; `nil` for a message re-queued after its connection dropped
        /// (its sender already returned).
        let sender: Sender?
    }

    /// What the socket's tasks share, behind ``shared``'s lock, grouped by concern.
    struct Shared {
        var machine: ReconnectStateMachine
        /// The open connection, once `onConnect` has finished (queued sends go to it).
        var current: WebSocket?
        var onConnectFinished = false
        /// Whether the `prepare` hook is running (ending the socket may interrupt it).
        var isPreparing = false
        var supervisor: Task<Void, Never>?
        var started = false
        /// Messages waiting for a connection, and the pump that hands them over.
        var outbox = Outbox()
        /// Who reads `messages`, and what they read from.
        var consumer = Consumer()
        /// The observers of ``ReconnectingWebSocket/State``.
        var watchers = Watchers()
        /// How the socket was ended, once it was.
        var ending = Ending()
    }

    /// Messages accepted by `send` and not yet handed to a connection.
    struct Outbox {
        var queue = Deque<QueuedMessage>()
        var queuedBytes = 0
        var nextSendID: UInt64 = 0
        var cancelledSends = Set<UInt64>()
        var pumpWaiter: UnsafeContinuation<QueuedMessage?, Never>?
        var pumpStopped = false
    }

    /// The consumer of `messages`.
    struct Consumer {
        /// Connections whose messages the consumer reads, oldest first: one that dropped
        /// stays until its buffered messages have been read.
        var readers = Deque<ClientConnection>()
        var waiters: [UnsafeContinuation<Void, Never>] = []
        var isCancelled = false
        /// `messages` streams handed out and not yet released.
        var liveStreams = 0
        var handleReleased = false
    }

    /// The observers of the socket's state.
    struct Watchers {
        var observers: [UInt64: AsyncStream<State>.Continuation] = [:]
        /// The last state handed to observers; what a new observer starts with, so it sees
        /// every later state exactly once.
        var publishedState: State = .idle
        var nextObserverID: UInt64 = 0
    }

    /// How the socket was ended.
    struct Ending {
        /// The close frame asked for when the socket was ended, for a connection that
        /// is open then or opens after.
        var close: (code: WebSocketCloseCode, reason: String)?
        /// The error queued sends fail with once the socket has ended.
        var error: WebSocketError?
        var unsent: [WebSocketMessage] = []
        /// `finish` calls waiting for the end.
        var waiters: [UnsafeContinuation<Void, Never>] = []
    }

    let url: String
    let configuration: WebSocketConfiguration
    /// The loop the caller gave; `nil`: a loop of ``WebSocketEventLoopGroup/shared``, kept
    /// across reconnects unless it is overloaded (``placedLoop``).
    let eventLoop: WebSocketEventLoop?
    /// The shared group's loop the connections go to, once the first was placed.
    private let placedLoop = AnnotatedMutex<WebSocketEventLoop?>(nil)
    let onConnect: (@Sendable (WebSocket) async throws -> Void)?
    /// Runs before every attempt; may set the attempt's URL and headers.
    let prepare: (@Sendable (inout WebSocketConnectAttempt) async throws -> Void)?
    let shared: AnnotatedMutex<Shared>
    /// Backoff sleeps and uptime, on the clock the socket was given.
    let timing: any ReconnectTiming
    /// The instant the state machine's times count from (it reads `ContinuousClock`
    /// instants; they are this plus the injected clock's elapsed time).
    private let timeBase = ContinuousClock.now

    init(
        url: String, configuration: WebSocketConfiguration, policy: ReconnectPolicy, eventLoop: WebSocketEventLoop?,
        clock: any Clock<Duration> = ContinuousClock(),
        prepare: (@Sendable (inout WebSocketConnectAttempt) async throws -> Void)? = nil,
        onConnect: (@Sendable (WebSocket) async throws -> Void)?
    ) {
        self.url = url
        self.prepare = prepare
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.timing = reconnectTiming(clock)
        self.onConnect = onConnect
        shared = AnnotatedMutex(
            Shared(machine: ReconnectStateMachine(policy: policy, refreshesCredentials: prepare != nil)), rank: .reconnectingStorage)
    }

    var policy: ReconnectPolicy { shared.withLock { $0.machine.policy } }

    /// The loop for the next connection: the caller's, else the shared group's loop of the
    /// last connection unless it is overloaded, else the least loaded.
    func loopForNextConnection() -> WebSocketEventLoop {
        if let eventLoop { return eventLoop }
        let group = WebSocketEventLoopGroup.shared
        return placedLoop.withLock { placed in
            let loop = placed.map(group.keeping) ?? group.next()
            placed = loop
            return loop
        }
    }

    /// Now, on the injected clock, as the state machine counts time.
    var now: ContinuousClock.Instant { timeBase.advanced(by: timing.elapsed()) }

    // MARK: - Starting and ending

    /// Starts the supervisor on first use.
    func startIfNeeded() {
        shared.withLock { shared in
            guard !shared.started else { return }
            shared.started = true
            guard !shared.machine.isFinished else { return }
            // The socket's one unstructured task. The socket is a value you iterate and send
            // on, so it has no scope of its own to run in; the task is bound to the socket's
            // life instead: it ends when the socket is closed, its `messages` iteration ends
            // or is cancelled, or the socket is released, and every end is awaited by close().
            shared.supervisor = Task { [self] in await supervise() }
        }
    }

    /// Ends the socket: closes the open connection with `code` (never a TCP drop), stops any
    /// attempt or backoff, and moves to `end` once that is done.
    func requestEnd(_ end: State, code: WebSocketCloseCode, reason: String = "") {
        let (accepted, current, supervisor, consumers) = shared.withLock { shared in
            let accepted = shared.machine.requestEnd(end)
            if accepted { shared.ending.close = (code, ClientConnection.truncatedCloseReason(reason)) }
            defer { shared.consumer.waiters = [] }
            return (accepted, shared.current, shared.supervisor, shared.consumer.waiters)
        }
        guard accepted else { return }
        current?.connection.requestClose(code: code, reason: ClientConnection.truncatedCloseReason(reason))
        // Interrupt a backoff sleep, prepare or onConnect, but never a connection attempt: cancelling
        // one could leave a socket the server already upgraded to be dropped without a close
        // frame. An attempt ends by itself (connectTimeout) and is then closed properly.
        if !isConnecting { supervisor?.cancel() }
        if supervisor == nil { finishWithoutSupervisor() }
        for consumer in consumers { consumer.resume() }
    }

    private var isConnecting: Bool {
        shared.withLock { shared in
            if case .connecting = shared.machine.state { return !shared.isPreparing }
            return false
        }
    }

    /// The socket ended before it ever started.
    private func finishWithoutSupervisor() {
        let finalState = shared.withLock { shared -> State? in
            guard shared.supervisor == nil, let end = shared.machine.requestedEnd else { return nil }
            _ = shared.machine.finish(end)
            return shared.machine.state
        }
        if let finalState { finish(finalState) }
    }

    /// Waits until the socket has ended and ``finish(_:)`` has run.
    func waitUntilFinished() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let done = shared.withLock { shared in
                if shared.ending.error != nil { return true }
                shared.ending.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    // MARK: - States

    func publish(_ state: State) {
        let observers = shared.withLock { shared in
            shared.watchers.publishedState = state
            return Array(shared.watchers.observers.values)
        }
        for observer in observers { observer.yield(state) }
    }

    func makeStateStream() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream<State>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let current: State = shared.withLock { shared in
            let id = shared.watchers.nextObserverID
            shared.watchers.nextObserverID += 1
            if !shared.watchers.publishedState.isTerminal { shared.watchers.observers[id] = continuation }
            continuation.onTermination = { [weak self] _ in
                self?.shared.withLock { _ = $0.watchers.observers.removeValue(forKey: id) }
            }
            // Under the lock: a state published right after registering must not be
            // yielded before this one. (A fresh stream's yield runs no termination handler.)
            continuation.yield(shared.watchers.publishedState)
            return shared.watchers.publishedState
        }
        if current.isTerminal { continuation.finish() }
        return stream
    }

    /// Ends everything once the supervisor is done: observers, consumers, queued sends.
    func finish(_ finalState: State) {
        let error: WebSocketError
        switch finalState {
        case .failed(let failure): error = failure
        case .cancelled: error = .closed(code: .goingAway, reason: "")
        default: error = .closed(code: .normalClosure, reason: "")
        }
        let (observers, consumers, finishers, senders, pump) = shared.withLock { shared in
            shared.ending.error = error
            shared.watchers.publishedState = finalState
            shared.current = nil
            let senders = shared.outbox.queue.compactMap(\.sender)
            shared.ending.unsent += shared.outbox.queue.filter { $0.sender == nil }.map(\.message)
            shared.outbox.queue = []
            shared.outbox.queuedBytes = 0
            defer {
                shared.watchers.observers = [:]
                shared.consumer.waiters = []
                shared.ending.waiters = []
                shared.outbox.pumpWaiter = nil
            }
            return (Array(shared.watchers.observers.values), shared.consumer.waiters, shared.ending.waiters, senders, shared.outbox.pumpWaiter)
        }
        for observer in observers {
            observer.yield(finalState)
            observer.finish()
        }
        for sender in senders { sender.resume(throwing: error) }
        pump?.resume(returning: nil)
        for consumer in consumers { consumer.resume() }
        for finisher in finishers { finisher.resume() }
    }
}
