import CLibWebSockets
import Glibc
import Synchronization
import SynchronizationSupport

/// Work that another thread hands to a ``ServiceThread``: it runs on the service
/// thread the next time the loop wakes.
package protocol ServiceThreadWork: AnyObject, Sendable {
    /// Runs on the service thread, the only thread that may call libwebsockets.
    func runOnServiceThread()
}

/// What a ``ServiceThread`` needs from the side (client or server) that uses it.
/// Every method is called on the service thread.
package protocol ServiceThreadDelegate: AnyObject, Sendable {
    /// Creates the lws context. `contextUser` must become `info.user` so callbacks find the thread.
    func makeContext(contextUser: UnsafeMutableRawPointer) -> OpaquePointer?
    /// Handles one lws protocol callback (every reason except the loop's own wake-up).
    func handleCallback(
        wsi: OpaquePointer?, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32
    /// Routes one lws log line emitted on the service thread.
    func log(level: Int32, line: String)
    /// Called once after the loop stops and before the context is destroyed.
    func willDestroyContext(_ context: OpaquePointer)
}

/// One dedicated thread that owns one `lws_context` and services it.
///
/// libwebsockets is not thread-safe except for `lws_cancel_service`. Other threads
/// therefore never call lws: they ``post(_:)`` work to a locked inbox and wake the
/// loop, which drains the inbox on its own thread in `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
/// The loop is only woken when the inbox goes from empty to non-empty, so a burst of
/// posts costs one wake-up.
package final class ServiceThread: Sendable {
    private enum RunState {
        case notStarted
        case starting
        case running
        case stopping
        case stopped
    }

    private struct Inbox {
        var work: [any ServiceThreadWork] = []
        /// Non-nil only while the context exists; guarded so `lws_cancel_service`
        /// never runs on a destroyed context.
        var context: ContextHandle?
        var runState: RunState = .notStarted
        var startWaiters: [CheckedContinuation<Void, any Error>] = []
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        var startError: String?
    }

    private let inbox = AnnotatedMutex(Inbox())
    package let delegate: any ServiceThreadDelegate
    private let name: String

    package init(name: String, delegate: any ServiceThreadDelegate) {
        self.name = name
        self.delegate = delegate
    }

    /// Starts the thread and creates the context on it, if not done yet.
    /// Throws ``WebSocketError/connectionFailed(_:)`` when the context cannot be created.
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
            case .fail(let reason): continuation.resume(throwing: WebSocketError.connectionFailed(reason))
            case .wait: break
            case .spawn: spawnThread()
            }
        }
    }

    /// Hands `work` to the service thread. Returns `false` when the loop has stopped
    /// (the work will never run).
    @discardableResult
    package func post(_ work: any ServiceThreadWork) -> Bool {
        inbox.withLock { inbox in
            switch inbox.runState {
            case .stopping, .stopped:
                return false
            case .notStarted, .starting, .running:
                inbox.work.append(work)
                // Wake only on the empty -> non-empty edge; later posts ride the same wake-up.
                if inbox.work.count == 1, let context = inbox.context {
                    lws_cancel_service(context.pointer)
                }
                return true
            }
        }
    }

    /// Whether the loop accepts work.
    package var isAcceptingWork: Bool {
        inbox.withLock { inbox in
            switch inbox.runState {
            case .notStarted, .starting, .running: true
            case .stopping, .stopped: false
            }
        }
    }

    /// Stops the loop, destroys the context on the service thread and waits for the thread to end.
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

    /// Runs everything posted so far. Service thread only (called from `EVENT_WAIT_CANCELLED`).
    package func drainInbox() {
        let batch: [any ServiceThreadWork] = inbox.withLock { inbox in
            guard !inbox.work.isEmpty else { return [] }
            var batch: [any ServiceThreadWork] = []
            swap(&batch, &inbox.work)
            return batch
        }
        for work in batch { work.runOnServiceThread() }
    }

    // MARK: - The thread

    private func spawnThread() {
        if !DetachedThread.run(name: name, { self.run() }) {
            failStart("could not start the service thread")
        }
    }

    private func failStart(_ reason: String) {
        let waiters: [CheckedContinuation<Void, any Error>] = inbox.withLock { inbox in
            inbox.runState = .stopped
            inbox.startError = reason
            defer { inbox.startWaiters = [] }
            return inbox.startWaiters
        }
        for waiter in waiters { waiter.resume(throwing: WebSocketError.connectionFailed(reason)) }
    }

    private func run() {
        ServiceThreadLogging.install(for: self)
        let contextUser = Unmanaged.passUnretained(self).toOpaque()
        guard let context = delegate.makeContext(contextUser: contextUser) else {
            failStart("libwebsockets could not create its context")
            finishStopping()
            return
        }
        let handle = ContextHandle(pointer: context)
        let startWaiters: [CheckedContinuation<Void, any Error>] = inbox.withLock { inbox in
            inbox.context = handle
            if case .starting = inbox.runState { inbox.runState = .running }
            defer { inbox.startWaiters = [] }
            return inbox.startWaiters
        }
        for waiter in startWaiters { waiter.resume() }
        drainInbox()
        while true {
            let stopping = inbox.withLock { inbox in
                if case .stopping = inbox.runState { return true }
                return false
            }
            if stopping { break }
            if lws_service(context, 0) < 0 {
                // The context failed: stop taking work before the final drain.
                inbox.withLock { $0.runState = .stopping }
                break
            }
        }
        // Work posted but never run is dropped here; the delegate fails what it owns.
        drainInbox()
        delegate.willDestroyContext(context)
        inbox.withLock { $0.context = nil }
        lws_context_destroy(context)
        finishStopping()
    }

    private func finishStopping() {
        let waiters: [CheckedContinuation<Void, Never>] = inbox.withLock { inbox in
            inbox.runState = .stopped
            defer { inbox.stopWaiters = [] }
            return inbox.stopWaiters
        }
        ServiceThreadLogging.uninstall()
        for waiter in waiters { waiter.resume() }
    }

}

/// The lws context pointer as the inbox keeps it, so other threads can wake the loop.
// @unchecked: other threads only pass it to lws_cancel_service (lws's one thread-safe
// call), and only under the inbox lock, which the service thread takes to clear it
// before destroying the context.
struct ContextHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
