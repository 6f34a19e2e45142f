import CLibWebSockets

extension EventLoopThread {
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
    func armNearestDeadline(_ evloop: UnsafeMutablePointer<wss_evloop>) {
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
    func fireDueTimers() {
        var due = spare.dueTimers
        spare.timers.takeDue(now: LoopTimers.now(), into: &due)
        guard !due.isEmpty else { return }
        for key in due { delegate.timerFired(key) }
        due.removeAll(keepingCapacity: true)
        spare.dueTimers = due
    }
}
