import CLibWebSockets
import Glibc
import Synchronization
import SynchronizationSupport

/// Work that another thread hands to a ``EventLoopThread``: it runs on the service
/// thread the next time the loop wakes.
package protocol LoopWork: AnyObject, Sendable {
    /// Runs on the loop thread, the only thread that may call libwebsockets.
    func runOnLoop()
}

/// What a ``EventLoopThread`` needs from the side (client or server) that uses it.
/// Every method is called on the loop thread.
package protocol EventLoopThreadDelegate: AnyObject, Sendable {
    /// Creates the lws context. `contextUser` must become `info.user` so callbacks find the
    /// thread. `foreignLoops`, for a thread on ``EventLoopThread/Backend/libev``, holds the
    /// libev loop the context must run on (``LWSContextFactory/runOnForeignLoop(_:_:)``).
    func makeContext(contextUser: UnsafeMutableRawPointer, foreignLoops: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> OpaquePointer?
    /// Handles one lws protocol callback (every reason except the loop's own wake-up).
    func handleCallback(
        wsi: OpaquePointer?, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32
    /// Routes one lws log line emitted on the loop thread.
    func log(level: Int32, line: String)
    /// Called once after the loop stops and before the context is destroyed.
    func willDestroyContext(_ context: OpaquePointer)
    /// Called after each `lws_service` pass, outside any lws callback: the place to resume
    /// continuations that callbacks deferred, so one pass's messages cost one wake-up.
    func serviceTurnEnded()
    /// Whether the callbacks since the last call read, wrote, opened or ended anything
    /// (debug builds ask after every pass, to catch a loop that spins; see ``LoopSpinWatch``).
    func takePassProgress() -> Bool
    /// The deadline armed with ``EventLoopThread/armTimer(_:after:)`` for `key` has come
    /// (outside any lws callback).
    func timerFired(_ key: OpaquePointer)
}

extension EventLoopThreadDelegate {
    package func serviceTurnEnded() {}
    package func takePassProgress() -> Bool { true }
    package func timerFired(_ key: OpaquePointer) {}
}

/// One dedicated thread that owns one `lws_context` and services it.
///
/// libwebsockets is not thread-safe except for `lws_cancel_service`. Other threads
/// therefore never call lws: they ``post(_:)`` work to a locked inbox and wake the
/// loop, which runs the inbox on its own thread between `lws_service` passes. The loop
/// is only woken when the inbox goes from empty to non-empty, so a burst of posts costs
/// one wake-up, and posts made on the loop thread itself never wake it (the loop
/// looks at the inbox before it waits).
///
/// The thread is also a `TaskExecutor`: jobs of tasks that prefer it run on it, between
/// passes, so a task that reads and writes a connection of this loop does so without a
/// thread hop (see `WebSocketEventLoop` in WebSocketStreams).
package final class EventLoopThread: TaskExecutor {
    /// What the thread waits in between passes.
    package enum Backend: Sendable {
        /// `lws_service`: lws's own poll(2), whose every wait costs O(sockets) (8.6 ms at
        /// 15,000), and lws's timers (a sorted list).
        case poll
        /// A libev loop on epoll(7) under the context (lws's libev plugin,
        /// `libwebsockets-evlib-ev`): a wait costs O(ready sockets), and
        /// ``armTimer(_:after:)`` keeps deadlines in a heap (``LoopTimers``).
        case libev

        /// `preferred`, unless the environment variable `WEBSOCKETSTREAMS_LOOP_BACKEND` says
        /// `poll` or `libev`: for comparing the two in one binary, and for a host without
        /// `libwebsockets-evlib-ev`.
        package static func chosen(preferring preferred: Backend) -> Backend {
            switch getenv("WEBSOCKETSTREAMS_LOOP_BACKEND").map({ String(cString: $0) }) {
            case "poll": .poll
            case "libev": .libev
            default: preferred
            }
        }
    }

    enum RunState {
        case notStarted
        case starting
        case running
        case stopping
        case stopped
    }

    struct Inbox {
        var work: [any LoopWork] = []
        /// Jobs of tasks that prefer this thread as their executor.
        var jobs: [UnownedJob] = []
        /// Non-nil only while the context exists; guarded so `lws_cancel_service`
        /// never runs on a destroyed context.
        var context: ContextHandle?
        var runState: RunState = .notStarted
        var startWaiters: [CheckedContinuation<Void, any Error>] = []
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        var startError: String?
        /// Set while the loop busy-polls (``busyPollBudget``): it looks at the inbox between
        /// its non-blocking passes, so posts need not wake it.
        var isPolling = false
    }

    let inbox = AnnotatedMutex(Inbox())
    package let delegate: any EventLoopThreadDelegate
    let name: String
    /// The loop thread's `pthread_self()` while it runs (0 before and after), so posts
    /// made on it can skip the wake-up.
    let threadID = Atomic<UInt>(0)
    /// Buffers the loop swaps with the inbox's, so draining allocates nothing.
    let spare = EventLoopThreadBuffers()
    /// Wake-ups decided under the inbox lock and not yet made: the context is destroyed
    /// only once none is left, so `lws_cancel_service` never sees a destroyed context.
    let wakesInFlight = Atomic<Int>(0)
    /// Debug builds: every `lws_service` pass.
    let passCount = Atomic<Int>(0)
    /// Debug builds: passes that made no progress right behind another such pass.
    let spinCount = Atomic<Int>(0)

    package let backend: Backend
    /// How long the loop keeps polling its sockets and inbox without blocking before it
    /// waits in the kernel (see ``busyPoll()``); zero, the default, never polls.
    package let busyPollBudget: Duration
    /// ``busyPollBudget`` in nanoseconds.
    package let busyPollNanoseconds: UInt64

    package init(name: String, delegate: any EventLoopThreadDelegate, backend: Backend = .poll, busyPollBudget: Duration = .zero) {
        self.name = name
        self.delegate = delegate
        self.backend = backend
        let budget = max(busyPollBudget, .zero)
        self.busyPollBudget = budget
        let (seconds, attoseconds) = budget.components
        busyPollNanoseconds = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    /// Starts the thread and creates the context on it, if not done yet.
    /// Throws ``StartFailure`` when the context cannot be created.
    package func start() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Decision { case resume, fail(String), wait, spawn }
            let decision: Decision = inbox.withLock { inbox in
                switch inbox.runState {
                case .running: return .resume
                case .stopping, .stopped: return .fail(inbox.startError ?? "the event loop has been shut down")
                case .starting:
                    inbox.startWaiters.append(continuation)
                    return .wait
                case .notStarted:
                    inbox.runState = .starting
                    inbox.startWaiters.append(continuation)
                    return .spawn
                }
            }
            switch decision {
            case .resume: continuation.resume()
            case .fail(let reason): continuation.resume(throwing: StartFailure(reason: reason))
            case .wait: break
            case .spawn: spawnThread()
            }
        }
    }

    /// Hands `work` to the loop thread. Returns `false` when the loop has stopped
    /// (the work will never run).
    @discardableResult
    package func post(_ work: any LoopWork) -> Bool {
        let (accepted, wake): (Bool, ContextHandle?) = inbox.withLock { inbox in
            switch inbox.runState {
            case .stopping, .stopped:
                return (false, nil)
            case .notStarted, .starting, .running:
                inbox.work.append(work)
                // Wake only on the empty -> non-empty edge; later posts ride the same wake-up.
                // A polling loop looks at the inbox anyway.
                guard inbox.work.count == 1, inbox.jobs.isEmpty, !inbox.isPolling, !isCurrent else { return (true, nil) }
                return (true, claimWake(inbox.context))
            }
        }
        if let wake { self.wake(wake) }
        return accepted
    }

    /// Decides, under the inbox lock, to wake the loop: the context is kept from being
    /// destroyed until ``wake(_:)`` has run (see ``wakesInFlight``).
    func claimWake(_ context: ContextHandle?) -> ContextHandle? {
        guard let context else { return nil }
        wakesInFlight.add(1, ordering: .relaxed)
        return context
    }

    /// Wakes the loop after the inbox lock is released, so the loop thread never
    /// waits for the lock behind a pipe write.
    func wake(_ context: ContextHandle) {
        lws_cancel_service(context.pointer)
        wakesInFlight.subtract(1, ordering: .releasing)
    }

    /// Whether the caller runs on this loop thread.
    package var isCurrent: Bool {
        let id = threadID.load(ordering: .relaxed)
        return id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0
    }

    /// Notes that another thread's wake-up ended the poll (loop thread, from the callback).
    func noteWakeUp() {
        #if DEBUG
        spare.wokenUp = true
        #endif
    }

    /// Debug builds: how many `lws_service` passes made no progress right behind another
    /// one that made none (a loop spinning instead of waiting). Always 0 in release builds.
    package var spinningPasses: Int { spinCount.load(ordering: .relaxed) }

    /// Debug builds: how many `lws_service` passes the thread has made. Tests count the
    /// passes a piece of work takes (a loop that spins makes thousands). Always 0 in
    /// release builds.
    package var passes: Int { passCount.load(ordering: .relaxed) }

    /// Whether the loop is busy-polling now (latency mode, between bursts of work), rather
    /// than working or asleep in the kernel. Tests check that an idle loop stops polling.
    package var isBusyPolling: Bool { inbox.withLock { $0.isPolling } }

    /// Whether the caller is a job this thread runs (a task that prefers it), between
    /// lws passes: work for the loop can then be done on the spot instead of posted.
    package var isRunningJobsHere: Bool {
        // `spare` is only read after `isCurrent` proved this is the loop thread.
        isCurrent && spare.runningJobs
    }

    // MARK: - TaskExecutor

    /// Runs `job` on the loop thread, after the current pass. Once the loop has
    /// stopped, jobs go to the global concurrent executor instead, so a task that
    /// prefers a stopped loop still runs.
    package func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        enum Route { case queued(wake: ContextHandle?), start, elsewhere }
        let route: Route = inbox.withLock { inbox in
            switch inbox.runState {
            case .stopping, .stopped:
                return .elsewhere
            case .notStarted:
                inbox.jobs.append(unowned)
                inbox.runState = .starting
                return .start
            case .starting, .running:
                inbox.jobs.append(unowned)
                // The same edge rule as `post(_:)`: wake only when the inbox was empty.
                guard inbox.jobs.count == 1, inbox.work.isEmpty, !inbox.isPolling, !isCurrent else { return .queued(wake: nil) }
                return .queued(wake: claimWake(inbox.context))
            }
        }
        switch route {
        case .queued(let wake): if let wake { self.wake(wake) }
        case .start: spawnThread()
        case .elsewhere: globalConcurrentExecutor.enqueue(unowned)
        }
    }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Whether the loop accepts work.
    /// Whether the thread was ever started (it may have stopped since): a loop that never
    /// started has no connections to close.
    package var wasStarted: Bool {
        inbox.withLock { inbox in
            if case .notStarted = inbox.runState { return false }
            return true
        }
    }

    package var isAcceptingWork: Bool {
        inbox.withLock { inbox in
            switch inbox.runState {
            case .notStarted, .starting, .running: true
            case .stopping, .stopped: false
            }
        }
    }

    /// Stops the loop, destroys the context on the loop thread and waits for the thread to end.
    package func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // lws logs in `lws_cancel_service`: on the loop thread its line waits for the lock's release.
            let resumeNow: Bool = LWSLogging.holdingLines { inbox.withLock { inbox in
                switch inbox.runState {
                case .notStarted, .stopped:
                    inbox.runState = .stopped
                    return true
                case .starting, .running, .stopping:
                    inbox.runState = .stopping
                    inbox.stopWaiters.append(continuation)
                    if let context = inbox.context { lws_cancel_service(context.pointer) }
                    return false
                }
            } }
            if resumeNow { continuation.resume() }
        }
    }
}
