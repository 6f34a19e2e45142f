import LibWebSocketsLoop
import Logging
import Synchronization
import SynchronizationSupport

/// One libwebsockets context and the dedicated thread that services it.
///
/// Every connection made on a loop is serviced on that loop's one thread, which is the
/// only thread that ever calls libwebsockets. Your tasks talk to it through a locked
/// queue and a wake-up, so nothing you do blocks the loop and nothing the loop does
/// blocks your tasks.
///
/// Most programs give no loop: connections go to the least loaded loop of
/// ``WebSocketEventLoopGroup/shared``, one loop per core. Create your own loop to isolate a
/// group of connections (e.g. in tests) and shut it down when done:
///
/// ```swift
/// let loop = WebSocketEventLoop(name: "feeds")
/// let connection = try await WebSocket.connect(to: "ws://127.0.0.1:9001/echo", eventLoop: loop)
/// // ...
/// await loop.shutdown()   // closes its connections with 1001, then stops the thread
/// ```
public final class WebSocketEventLoop: Sendable {
    /// The first loop of ``WebSocketEventLoopGroup/shared``, the group connections made
    /// without a loop are placed on. Its thread starts on first use.
    public static let shared = WebSocketEventLoop(name: "ws-shared-loop")

    let thread: EventLoopThread
    let connections: LoopConnections
    /// How this loop waits for its sockets (fixed at creation).
    public let configuration: Configuration
    private let shuttingDown = AnnotatedMutex(false)
    /// Connections made on this loop and not yet released.
    private let liveConnections = Atomic<Int>(0)
    /// Connections ``WebSocketEventLoopGroup/next()`` placed here that have not been made
    /// yet: each connection made takes one back. Without them a burst of connects, none
    /// made yet, would all see the same loads and pile onto one loop.
    private let placedConnections = Atomic<Int>(0)

    /// How many connections this loop holds or is about to: what a group places by.
    var load: Int { liveConnections.load(ordering: .relaxed) + placedConnections.load(ordering: .relaxed) }

    /// How many connections this loop holds (made, not yet released).
    var connectionCount: Int { liveConnections.load(ordering: .relaxed) }

    /// A group chose this loop for a connection about to be made.
    func connectionPlaced() {
        placedConnections.add(1, ordering: .relaxed)
    }

    /// A connection on this loop was made (`+1`: it takes back a placement, if any) or
    /// released (`-1`).
    func connectionCountChanged(by delta: Int) {
        liveConnections.add(delta, ordering: .relaxed)
        guard delta > 0 else { return }
        var placed = placedConnections.load(ordering: .relaxed)
        while placed > 0 {
            let (exchanged, current) = placedConnections.compareExchange(
                expected: placed, desired: placed - 1, ordering: .relaxed)
            if exchanged { break }
            placed = current
        }
    }

    /// Creates a loop. Its thread and lws context are created on the first connection.
    ///
    /// - Parameters:
    ///   - name: The loop thread's name (visible in debuggers and `top -H`).
    ///   - logger: Receives libwebsockets lines logged outside any connection's callbacks.
    ///   `nil` (the default) drops them.
    public init(name: String = "ws-loop", logger: Logger? = nil) {
        configuration = Configuration()
        connections = LoopConnections(logger: logger ?? .silent)
        thread = Self.makeThread(name: name, connections: connections, configuration: configuration)
    }

    /// Creates a loop that waits as `configuration` says, e.g. in latency mode
    /// (``Configuration/lowLatency(busyPolling:)``). Its thread and lws context are created
    /// on the first connection.
    ///
    /// - Parameters:
    ///   - name: The loop thread's name (visible in debuggers and `top -H`).
    ///   - logger: Receives libwebsockets lines logged outside any connection's callbacks.
    ///   `nil` (the default) drops them.
    ///   - configuration: How the loop waits; see ``Configuration``.
    public init(name: String = "ws-loop", logger: Logger? = nil, configuration: Configuration) {
        self.configuration = configuration
        connections = LoopConnections(logger: logger ?? .silent)
        thread = Self.makeThread(name: name, connections: connections, configuration: configuration)
    }

    private static func makeThread(name: String, connections: LoopConnections, configuration: Configuration) -> EventLoopThread {
        // epoll under lws: waits and timers that cost the same at 15,000 connections as at 10.
        EventLoopThread(
            name: name, delegate: connections, backend: .chosen(preferring: .libev),
            busyPollBudget: configuration.busyPollDuration)
    }

    /// Starts the thread if needed; throws once the loop has been shut down.
    func ensureStarted() async throws {
        if shuttingDown.withLock({ $0 }) {
            throw WebSocketError.connectionFailed("the event loop has been shut down")
        }
        do {
            try await thread.start()
        } catch let failure as EventLoopThread.StartFailure {
            throw WebSocketError.connectionFailed(failure.reason)
        }
    }

    /// Closes every connection of this loop with 1001 (going away), waits for their close
    /// handshakes for at most `gracePeriod`, then stops the thread and frees the context;
    /// connections still open by then are dropped. Later connects on this loop fail.
    public func shutdown(gracePeriod: Duration = .seconds(3)) async {
        let first = shuttingDown.withLock { flag in
            defer { flag = true }
            return !flag
        }
        if first, thread.wasStarted, thread.isAcceptingWork {
            let allClosed = ResumeOnceSignal()
            let posted = thread.post(LoopClosure { [connections] in
                connections.closeAll { allClosed.signal() }
            })
            if posted {
                await allClosed.wait(atMost: gracePeriod)
            }
        }
        await thread.shutdown()
    }
}

/// A loop is also a `TaskExecutor`: a task that prefers it runs on the loop's service
/// thread, between its I/O passes. Reading a message and sending the answer then need no
/// thread hop at all (a task on the global executor costs two per round trip: the loop
/// resumes it on a pool thread, its `send` wakes the loop), which roughly halves
/// request/response latency.
///
/// ```swift
/// try await withTaskExecutorPreference(WebSocketEventLoop.shared) {
///     let connection = try await WebSocket.connect(to: "ws://127.0.0.1:9001/echo")
///     for await message in connection.messages {
///         try await connection.send(message)   // written before the loop polls again
///     }
/// }
/// ```
///
/// Code running there runs *on* the loop: it must not block (no blocking I/O, no long
/// computation, no semaphores), or every connection of the loop waits. Hand heavy work
/// to another task. Once the loop has shut down, its jobs run on the global executor.
extension WebSocketEventLoop: TaskExecutor {
    /// Queues `job` to run on the loop's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        thread.enqueue(job)
    }

    /// The loop's identity as a task executor (its loop thread's).
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        thread.asUnownedTaskExecutor()
    }
}

extension WebSocketEventLoop {
    /// How many connections the loop still owns (not yet destroyed by libwebsockets);
    /// for leak checks in tests.
    func liveConnectionCount() async -> Int {
        guard thread.isAcceptingWork else { return 0 }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let posted = thread.post(LoopClosure { [connections] in
                continuation.resume(returning: connections.liveConnectionCount)
            })
            if !posted { continuation.resume(returning: 0) }
        }
    }
}

extension Logger {
    /// A logger that drops everything: the default for connections and loops.
    /// Its level is `.critical`, so nothing (lws's own lines included) is even formatted.
    static let silent: Logger = {
        var logger = Logger(label: "WebSocketStreams.silent", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }()
}
