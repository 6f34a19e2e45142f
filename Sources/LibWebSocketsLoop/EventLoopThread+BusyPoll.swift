import CLibWebSockets
import Glibc
import SynchronizationSupport

extension EventLoopThread {
    /// Latency mode: instead of sleeping in the kernel as soon as nothing is queued, the loop
    /// keeps making non-blocking passes over its sockets (`epoll_wait` with a zero timeout
    /// under libev, `lws_service` without waiting on poll) and looking at its inbox, for at
    /// most ``busyPollBudget``. A reply that arrives within the budget is read without a
    /// wake-up, and work posted meanwhile needs none either (``Inbox/isPolling``: posts do
    /// not write the eventfd then).
    ///
    /// Returns `true` when something happened (a callback ran, work or a job was posted, the
    /// loop is stopping): the caller goes round again without waiting, and polls afresh after
    /// that. Returns `false` when the budget ran out with nothing to do: the caller waits.
    /// Loop thread only, outside lws callbacks.
    func busyPoll(context: OpaquePointer, evloop: UnsafeMutablePointer<wss_evloop>?) -> Bool {
        let deadline = LoopTimers.now() &+ busyPollNanoseconds
        inbox.withLock { $0.isPolling = true }
        while true {
            let callbacksBefore = spare.callbacks
            if let evloop {
                armNearestDeadline(evloop)
                if wss_evloop_run(evloop, 1) != 0 { spare.armedDeadline = nil }
                fireDueTimers()
            } else if lws_service(context, -1) < 0 {
                inbox.withLock { inbox in
                    inbox.isPolling = false
                    inbox.runState = .stopping
                }
                return true
            }
            let didSomething = spare.callbacks != callbacksBefore
            if didSomething { delegate.serviceTurnEnded() }
            let last = didSomething || LoopTimers.now() >= deadline
            // One look at the inbox per pass; on the way out, the flag goes down under the
            // same lock, so a post either saw it up (and its work is seen here) or wakes the wait.
            let queued = inbox.withLock { inbox in
                let queued = !inbox.work.isEmpty || !inbox.jobs.isEmpty || inbox.runState.isStopping
                if queued || last { inbox.isPolling = false }
                return queued
            }
            if queued || didSomething { return true }
            if last { return false }
            // Polite polling: with fewer cores than busy threads, the thread this loop waits
            // for (a peer on this machine, the task answering) gets the core. Measured under
            // load: W1 in latency mode went from 0.10x raw C to 0.77x with it.
            sched_yield()
        }
    }
}

extension EventLoopThread.RunState {
    /// Whether the loop has been asked to stop (or has).
    var isStopping: Bool {
        switch self {
        case .stopping, .stopped: true
        case .notStarted, .starting, .running: false
        }
    }
}
