/// A type whose work runs until the task running it is cancelled.
///
/// Typically the work is a `for await` loop over a sequence that never ends
/// (a timer, a notification stream, a socket's messages); cancelling the task
/// ends the loop, and `runUntilCancelled()` returns.
///
/// ```swift
/// struct Heartbeat: RunUntilCancelled {
///     let ticks: AsyncStream<Int>
///
///     func runUntilCancelled() async {
///         for await tick in ticks { print("tick \(tick)") }
///     }
/// }
///
/// bag.addTask { await Heartbeat(ticks: timer).runUntilCancelled() }
/// ```
///
/// Own the task with a lifetime: a ``TaskBag``, an ``IdentifiableTaskBag`` or
/// a ``TaskScope``. To run several for one scope, use
/// ``runUntilCancelled(_:)-(RunUntilCancelled...)``.
public protocol RunUntilCancelled: Sendable {
    /// Does the work; returns once the current task is cancelled (or the work
    /// has nothing left to do).
    func runUntilCancelled() async
}

/// Runs every member concurrently, each in a child task, until the calling task is cancelled.
///
/// ```swift
/// bag.addTask {
///     await runUntilCancelled(heartbeat, notificationLogger)
/// }
/// ```
///
/// Returns once the calling task is cancelled and every member has returned.
/// A member that returns early does not end the others, nor this call. Inside a
/// type that itself conforms to ``RunUntilCancelled``, call it as
/// `TaskLifetimes.runUntilCancelled(...)`, since the type's own method hides it.
///
/// - Parameter members: The work to run; none at all simply waits for cancellation.
public func runUntilCancelled(_ members: any RunUntilCancelled...) async {
    await runUntilCancelled(members)
}

/// Runs every member concurrently, each in a child task, until the calling task is cancelled.
///
/// ```swift
/// await runUntilCancelled(rooms.map { RoomListener(room: $0) })
/// ```
///
/// Returns once the calling task is cancelled and every member has returned.
/// A member that returns early does not end the others, nor this call.
///
/// - Parameter members: The work to run; an empty array simply waits for cancellation.
public func runUntilCancelled(_ members: [any RunUntilCancelled]) async {
    await withDiscardingTaskGroup { group in
        for member in members {
            group.addTask { await member.runUntilCancelled() }
        }
        // Cancelling the calling task cancels this body and every child.
        await waitUntilCancelled()
    }
}

/// Suspends until the current task is cancelled; returns at once if it already is.
func waitUntilCancelled() async {
    // A stream that never yields: its iteration ends only on cancellation.
    let (neverEnding, continuation) = AsyncStream<Never>.makeStream()
    for await _ in neverEnding {}
    continuation.finish()
}
