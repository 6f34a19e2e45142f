import CLibWebSockets

/// The buffers ``EventLoopThread/runInbox(rounds:)`` swaps with the inbox's, whether it
/// is running jobs, and the lws log lines held back under a lock.
// @unchecked: only the loop thread uses them (`runInbox` runs there only,
// `isRunningJobsHere` reads `runningJobs` only after checking it runs there, and log lines
// reach `heldLogLines` through the loop thread's own pthread registration).
final class EventLoopThreadBuffers: @unchecked Sendable {
    var work: [any LoopWork] = []
    var jobs: [UnownedJob] = []
    /// lws's log lines held back while the loop thread holds a lock (``LWSLogging/holdingLines(_:)``),
    /// for the delegate once it is released; `nil` when lines go out at once.
    var heldLogLines: [(level: Int32, line: String)]?
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
    /// lws callbacks handed to the delegate so far (wrapping): the busy poll tells a pass
    /// that did something from an empty one by it.
    var callbacks: UInt = 0
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
