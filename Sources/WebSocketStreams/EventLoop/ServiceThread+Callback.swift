import CLibWebSockets

/// The one lws protocol callback for every context a ``ServiceThread`` owns.
///
/// It finds the thread through the context's user pointer, answers the loop's own
/// wake-up, and hands every other reason to the delegate.
package func serviceThreadCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons,
    _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let contextUser = lws_context_user(context) else {
        return 0
    }
    let thread = Unmanaged<ServiceThread>.fromOpaque(contextUser).takeUnretainedValue()
    if reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED {
        thread.drainInbox()
        return 0
    }
    return thread.delegate.handleCallback(wsi: wsi, reason: reason, user: user, input: input, length: length)
}
