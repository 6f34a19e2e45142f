extension WebSocket {
    /// Where the body of ``WebSocket/withConnection(to:configuration:eventLoop:runningOn:isolation:_:)``
    /// runs, when it is not isolated to an actor.
    ///
    /// | | Round trip (W1) | Streaming (W4) | Rule |
    /// |---|---|---|---|
    /// | ``default`` | two thread hops per request and reply | consumer in parallel with the loop | anything goes |
    /// | ``eventLoop`` | no thread hop | consumer and I/O share one thread | never block |
    ///
    /// See <doc:Performance> for measured figures.
    public enum BodyExecutor: Sendable, Hashable {
        /// Swift's default executor: `body` runs on a pool thread, in parallel with the
        /// event loop. Every message wakes that thread and every `send` wakes the loop.
        /// The right choice for streaming (a fast consumer keeps up with more messages)
        /// and for any code that may block or compute for long.
        case `default`
        /// The event loop's own thread, between its I/O passes: a message is handled and
        /// the answer written without any thread hop, which cuts request/response latency.
        /// `body` must not block or compute for long: every connection of the loop waits
        /// while it runs. Child tasks inherit the preference; hand heavy work to a task
        /// with `withTaskExecutorPreference(nil)` or a detached task.
        case eventLoop
    }
}
