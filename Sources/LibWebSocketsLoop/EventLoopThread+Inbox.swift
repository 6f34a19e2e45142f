import SynchronizationSupport

extension EventLoopThread {
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
}
