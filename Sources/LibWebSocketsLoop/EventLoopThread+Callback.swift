import CLibWebSockets

/// The one lws protocol callback for every context a ``EventLoopThread`` owns.
///
/// It finds the thread through the context's user pointer, ignores the loop's own
/// wake-up, and hands every other reason to the delegate.
package func eventLoopThreadCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons,
    _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    switch reason {
    case LWS_CALLBACK_LOCK_POLL, LWS_CALLBACK_UNLOCK_POLL, LWS_CALLBACK_CHANGE_MODE_POLL_FD,
         LWS_CALLBACK_ADD_POLL_FD, LWS_CALLBACK_DEL_POLL_FD, LWS_CALLBACK_GET_THREAD_ID:
        // lws's poll bookkeeping: several per write on every connection, and nothing here
        // handles them.
        return 0
    default:
        break
    }
    guard let wsi, let context = lws_get_context(wsi), let contextUser = lws_context_user(context) else {
        return 0
    }
    let thread = Unmanaged<EventLoopThread>.fromOpaque(contextUser).takeUnretainedValue()
    if reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED {
        // The wake-up only ends the poll; the loop runs the inbox after this pass.
        thread.noteWakeUp()
        return 0
    }
    // Counted for the busy poll: a pass that ran a callback did something (loop thread only).
    thread.spare.callbacks &+= 1
    return thread.delegate.handleCallback(wsi: wsi, reason: reason, user: user, input: input, length: length)
}

extension EventLoopThread {
    /// Sets the one timer of `wsi` (`LWS_CALLBACK_TIMER` on ``Backend/poll``, the
    /// delegate's ``EventLoopThreadDelegate/timerFired(_:)`` on ``Backend/libev``) `delay`
    /// from now; `nil` disarms it on libev and sets it an hour away on poll.
    ///
    /// Never `LWS_SET_TIMER_USEC_CANCEL` on poll: lws 4.1.6 adds it to the current time like
    /// any other delay, so "cancel" schedules the timer 1 µs in the past and it fires at once.
    package static func setTimer(of wsi: OpaquePointer, after delay: Duration?) {
        if let thread = owner(of: wsi), case .libev = thread.backend {
            thread.armTimer(wsi, after: delay)
            return
        }
        let (seconds, attoseconds) = (delay ?? .seconds(3600)).components
        lws_set_timer_usecs(wsi, max(1, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }

    /// Forgets `wsi`'s timer as lws frees it (`LWS_CALLBACK_WSI_DESTROY`). Only libev
    /// loops keep timers of their own; lws drops its own with the socket.
    package static func forgetTimer(of wsi: OpaquePointer) {
        if let thread = owner(of: wsi), case .libev = thread.backend {
            thread.armTimer(wsi, after: nil)
        }
    }

    /// The thread whose context `wsi` belongs to (its context's user pointer).
    package static func owner(of wsi: OpaquePointer) -> EventLoopThread? {
        guard let context = lws_get_context(wsi), let contextUser = lws_context_user(context) else { return nil }
        return Unmanaged<EventLoopThread>.fromOpaque(contextUser).takeUnretainedValue()
    }
}
