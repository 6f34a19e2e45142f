import LibWebSocketsLoop
import DequeModule
import Logging
import Synchronization
import SynchronizationSupport
import WebSocketCore

/// The internal core of one client connection.
///
/// It holds the ``ConnectionStateMachine`` behind its lock, shared by the user's tasks and
/// the loop thread; the ``WriteSide``, whose lock makes one writer of the socket (taken
/// before the machine's, never after: `LockOrder.swift`, checked in debug builds); and the ``ClientTransport`` that only the loop
/// thread touches. User operations take a lock, get an action back, release the lock and
/// then resume continuations or wake the loop: nothing is resumed, awaited or called out
/// to while a lock is held.
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
    private let eventLoop: WebSocketEventLoop
    /// Numbers the waiting senders and pings, so a cancellation finds its own.
    let waiterIDs = Atomic<UInt64>(0)
    /// Payload bytes handed to lws so far (written by the loop thread, read by anyone).
    let bytesWritten = Atomic<Int>(0)
    /// The connection's metric handles; `nil` when no metrics backend is there.
    let metrics: ConnectionMetrics?
    /// Latency mode (the loop's ``WebSocketEventLoop/Configuration/busyPollDuration``, in
    /// nanoseconds): how long a consumer off the loop thread polls for the next message
    /// before it parks (``ClientConnection/pollForMessage(batchInto:batching:)``); 0 never polls.
    let consumerPollNanoseconds: UInt64
    /// Latency mode only: bumped by the loop each time it hands received messages to the
    /// machine, so a polling consumer takes the machine's lock only when something came.
    let receivedGeneration = Atomic<UInt>(0)
    /// Whether the consumer last parked on this connection's loop thread (a task that
    /// prefers the loop): the loop then resumes it after its pass, else at once.
    let consumerWaitsOnLoop = Atomic<Bool>(false)

    init(
        url: WebSocketURL, configuration: WebSocketConfiguration, eventLoop: WebSocketEventLoop,
        target: ConnectTarget, timings clock: ConnectClock = ConnectClock(timings: WebSocketConnectTimings(), startedAt: .now),
        handshakeDeadline: ContinuousClock.Instant, metrics: ConnectionMetrics? = nil
    ) {
        self.metrics = metrics
        self.url = url
        let sharedConfiguration = SharedConfiguration(configuration)
        self.sharedConfiguration = sharedConfiguration
        self.logger = configuration.logger
        self.eventLoop = eventLoop
        consumerPollNanoseconds = eventLoop.thread.busyPollNanoseconds
        machine = AnnotatedMutex(
            ConnectionStateMachine(configuration: configuration, handshakeDeadline: handshakeDeadline), rank: .connectionMachine)
        writeSide = WriteSide(loop: eventLoop.thread)
        transport = ClientTransport(configuration: sharedConfiguration, url: url, target: target, clock: clock)
        eventLoop.connectionCountChanged(by: 1)
    }

    deinit {
        eventLoop.connectionCountChanged(by: -1)
    }

    /// The thread of the loop this connection runs on.
    var loopThread: EventLoopThread { eventLoop.thread }

    /// A fact about the connection, read under the machine's lock: the public getters of
    /// ``WebSocket`` read through this, never the lock itself.
    func read<Fact: Sendable>(_ fact: (borrowing ConnectionStateMachine) -> Fact) -> Fact {
        machine.withLock { fact($0) }
    }

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
