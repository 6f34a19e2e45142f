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

    private enum RunState {
        case notStarted
        case starting
        case running
        case stopping
        case stopped
    }

    private struct Inbox {
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
    }

    private let inbox = AnnotatedMutex(Inbox())
    package let delegate: any EventLoopThreadDelegate
    private let name: String
    /// The loop thread's `pthread_self()` while it runs (0 before and after), so posts
    /// made on it can skip the wake-up.
    private let threadID = Atomic<UInt>(0)
    /// Buffers the loop swaps with the inbox's, so draining allocates nothing.
    private let spare = EventLoopThreadBuffers()
    /// Wake-ups decided under the inbox lock and not yet made: the context is destroyed
    /// only once none is left, so `lws_cancel_service` never sees a destroyed context.
    private let wakesInFlight = Atomic<Int>(0)
    /// Debug builds: every `lws_service` pass.
    private let passCount = Atomic<Int>(0)
    /// Debug builds: passes that made no progress right behind another such pass.
    private let spinCount = Atomic<Int>(0)

    package let backend: Backend

    package init(name: String, delegate: any EventLoopThreadDelegate, backend: Backend = .poll) {
        self.name = name
        self.delegate = delegate
        self.backend = backend
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
                guard inbox.work.count == 1, inbox.jobs.isEmpty, !isCurrent else { return (true, nil) }
                return (true, claimWake(inbox.context))
            }
        }
        if let wake { self.wake(wake) }
        return accepted
    }

    /// Decides, under the inbox lock, to wake the loop: the context is kept from being
    /// destroyed until ``wake(_:)`` has run (see ``wakesInFlight``).
    private func claimWake(_ context: ContextHandle?) -> ContextHandle? {
        guard let context else { return nil }
        wakesInFlight.add(1, ordering: .relaxed)
        return context
    }

    /// Wakes the loop after the inbox lock is released, so the loop thread never
    /// waits for the lock behind a pipe write.
    private func wake(_ context: ContextHandle) {
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
                guard inbox.jobs.count == 1, inbox.work.isEmpty, !isCurrent else { return .queued(wake: nil) }
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
            let resumeNow: Bool = inbox.withLock { inbox in
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
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Runs everything posted so far, then the jobs queued so far, repeating while running
    /// them queued more (a task's job that sends posts its connection), up to a bound so
    /// sockets are not starved. Loop thread only, outside lws callbacks. Returns
    /// whether anything is still queued.
    @discardableResult
    package func runInbox(rounds: Int = 8) -> Bool {
        var pending = false
        for _ in 0..<rounds {
            var work = spare.work
            var jobs = spare.jobs
            pending = inbox.withLock { inbox in
                guard !inbox.work.isEmpty || !inbox.jobs.isEmpty else { return false }
                swap(&work, &inbox.work)
                swap(&jobs, &inbox.jobs)
                return true
            }
            guard pending else { break }
            spare.ranWork = true
            for item in work { item.runOnLoop() }
            if !jobs.isEmpty {
                let executor = asUnownedTaskExecutor()
                spare.runningJobs = true
                for job in jobs { job.runSynchronously(on: executor) }
                spare.runningJobs = false
            }
            delegate.serviceTurnEnded()
            work.removeAll(keepingCapacity: true)
            jobs.removeAll(keepingCapacity: true)
            spare.work = work
            spare.jobs = jobs
            pending = inbox.withLock { !$0.work.isEmpty || !$0.jobs.isEmpty }
            if !pending { break }
        }
        return pending
    }

    // MARK: - The thread

    private func spawnThread() {
        if !DetachedThread.run(name: name, { self.run() }) {
            failStart("could not start the loop thread")
        }
    }

    private func failStart(_ reason: String) {
        let waiters: [CheckedContinuation<Void, any Error>] = inbox.withLock { inbox in
            inbox.runState = .stopped
            inbox.startError = reason
            defer { inbox.startWaiters = [] }
            return inbox.startWaiters
        }
        for waiter in waiters { waiter.resume(throwing: StartFailure(reason: reason)) }
    }

    private func run() {
        LWSLogging.install(for: self)
        let contextUser = Unmanaged.passUnretained(self).toOpaque()
        var evloop: UnsafeMutablePointer<wss_evloop>?
        let foreignLoops = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
        defer { foreignLoops.deallocate() }
        if case .libev = backend {
            guard let made = wss_evloop_new() else {
                failStart("libev could not create an epoll loop")
                finishStopping()
                return
            }
            evloop = made
            foreignLoops.initialize(to: wss_evloop_native(made))
        }
        guard let context = delegate.makeContext(contextUser: contextUser, foreignLoops: evloop == nil ? nil : foreignLoops) else {
            if let evloop { wss_evloop_free(evloop) }
            failStart(evloop == nil
                ? "libwebsockets could not create its context"
                : "libwebsockets could not create its context on libev (is libwebsockets-evlib-ev installed?)")
            finishStopping()
            return
        }
        if let evloop { wss_evloop_start_housekeeping(evloop, context) }
        let handle = ContextHandle(pointer: context)
        let startWaiters: [CheckedContinuation<Void, any Error>] = inbox.withLock { inbox in
            inbox.context = handle
            if case .starting = inbox.runState { inbox.runState = .running }
            defer { inbox.startWaiters = [] }
            return inbox.startWaiters
        }
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        for waiter in startWaiters { waiter.resume() }
        #if DEBUG
        var spinWatch = LoopSpinWatch()
        #endif
        while true {
            let pending = runInbox()
            let stopping = inbox.withLock { inbox in
                if case .stopping = inbox.runState { return true }
                return false
            }
            if stopping { break }
            // Wait only when nothing is queued: anything posted from now on by another
            // thread wakes the wait, and this thread posts only between passes.
            if let evloop {
                armNearestDeadline(evloop)
                if wss_evloop_run(evloop, pending ? 1 : 0) != 0 {
                    // Spent: armed again for whatever deadline is nearest next time.
                    spare.armedDeadline = nil
                }
                fireDueTimers()
            } else if lws_service(context, pending ? -1 : 0) < 0 {
                // The context failed: stop taking work before the final drain.
                inbox.withLock { $0.runState = .stopping }
                break
            }
            delegate.serviceTurnEnded()
            #if DEBUG
            passCount.add(1, ordering: .relaxed)
            // A pass another thread woke is not the loop spinning on its own: a wake-up decided
            // under the inbox lock and made after it can arrive once its work already ran.
            let progress = delegate.takePassProgress() || spare.ranWork || spare.wokenUp
            spare.ranWork = false
            spare.wokenUp = false
            if spinWatch.passEnded(madeProgress: progress, at: .now) {
                if spinCount.add(1, ordering: .relaxed).newValue == 1 {
                    delegate.log(level: 1, line: "\(name): lws passes keep making no progress back to back (the loop is spinning)")
                }
            }
            #endif
        }
        // Work posted but never run is dropped here; the delegate fails what it owns.
        runInbox()
        delegate.willDestroyContext(context)
        let strandedJobs: [UnownedJob] = inbox.withLock { inbox in
            inbox.context = nil
            defer { inbox.jobs = [] }
            return inbox.jobs
        }
        // No new wake-up can start now that the context is gone from the inbox; let those
        // already decided finish their pipe write first.
        while wakesInFlight.load(ordering: .acquiring) > 0 { sched_yield() }
        if let evloop { wss_evloop_stop_housekeeping(evloop) }
        lws_context_destroy(context)
        if let evloop { wss_evloop_free(evloop) }
        spare.timers = LoopTimers()
        delegate.serviceTurnEnded()
        threadID.store(0, ordering: .relaxed)
        finishStopping()
        // Jobs queued while stopping run elsewhere; later ones go there directly.
        for job in strandedJobs { globalConcurrentExecutor.enqueue(job) }
    }

    // MARK: - Timers (libev backend)

    /// Sets `key`'s one deadline `delay` from now, replacing any it had; `nil` disarms it.
    /// When it comes, the delegate's ``EventLoopThreadDelegate/timerFired(_:)`` runs once.
    /// Loop thread only, on the ``Backend/libev`` backend.
    package func armTimer(_ key: OpaquePointer, after delay: Duration?) {
        guard let delay else {
            spare.timers.disarm(key)
            return
        }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        spare.timers.arm(key, at: LoopTimers.now() &+ UInt64(nanoseconds))
    }

    /// Points the libev timer at the nearest deadline, when that changed.
    private func armNearestDeadline(_ evloop: UnsafeMutablePointer<wss_evloop>) {
        let nearest = spare.timers.nearest()
        guard nearest != spare.armedDeadline else { return }
        spare.armedDeadline = nearest
        guard let nearest else {
            wss_evloop_set_timer(evloop, -1)
            return
        }
        let now = LoopTimers.now()
        wss_evloop_set_timer(evloop, nearest > now ? Double(nearest - now) / 1e9 : 0)
    }

    /// Runs the delegate's timer handler for every deadline that has come.
    private func fireDueTimers() {
        var due = spare.dueTimers
        spare.timers.takeDue(now: LoopTimers.now(), into: &due)
        guard !due.isEmpty else { return }
        for key in due { delegate.timerFired(key) }
        due.removeAll(keepingCapacity: true)
        spare.dueTimers = due
    }

    private func finishStopping() {
        let waiters: [CheckedContinuation<Void, Never>] = inbox.withLock { inbox in
            inbox.runState = .stopped
            defer { inbox.stopWaiters = [] }
            return inbox.stopWaiters
        }
        LWSLogging.uninstall()
        for waiter in waiters { waiter.resume() }
    }

}

/// The buffers ``EventLoopThread/runInbox(rounds:)`` swaps with the inbox's, and whether it
/// is running jobs.
// @unchecked: only the loop thread uses them (`runInbox` runs there only, and
// `isRunningJobsHere` reads `runningJobs` only after checking it runs there).
private final class EventLoopThreadBuffers: @unchecked Sendable {
    var work: [any LoopWork] = []
    var jobs: [UnownedJob] = []
    /// Set while `runInbox` runs jobs.
    var runningJobs = false
    /// Set when `runInbox` ran something since the loop last looked (debug builds).
    var ranWork = false
    /// Set when another thread's wake-up ended the poll since the loop last looked (debug
    /// builds): such a pass was asked for, even if its work already ran.
    var wokenUp = false
    /// The sockets' deadlines (libev backend).
    var timers = LoopTimers()
    /// The deadline the libev timer is set to, if any.
    var armedDeadline: UInt64?
    /// Storage for the deadlines due in a pass.
    var dueTimers: [OpaquePointer] = []
}

/// The lws context pointer as the inbox keeps it, so other threads can wake the loop.
// @unchecked: other threads only pass it to lws_cancel_service (lws's one thread-safe
// call), after taking it from the inbox under its lock and counting themselves in
// `wakesInFlight`; the loop thread clears it under the lock and waits for that count
// to reach zero before destroying the context.
struct ContextHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

extension EventLoopThread {
    /// Why the thread could not start its libwebsockets context.
    package struct StartFailure: Error, Sendable {
        package let reason: String
    }
}

/// A closure posted to a loop thread, for rare operations (the hot paths post the
/// connection itself, which allocates nothing).
package final class LoopClosure: LoopWork {
    private let body: @Sendable () -> Void

    package init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    package func runOnLoop() {
        body()
    }
}
