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
    return thread.delegate.handleCallback(wsi: wsi, reason: reason, user: user, input: input, length: length)
}
