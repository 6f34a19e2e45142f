import CLibWebSockets
import Glibc
import Synchronization
import SynchronizationSupport

extension EventLoopThread {
    func spawnThread() {
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
            // Latency mode: poll without sleeping for a while first; go round again if that
            // found something, wait in the kernel only once it found nothing.
            if !pending, busyPollNanoseconds > 0, busyPoll(context: context, evloop: evloop) {
                #if DEBUG
                passCount.add(1, ordering: .relaxed)
                #endif
                continue
            }
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
