extension ConnectionStateMachine {
    /// A `messages` stream was handed out.
    mutating func streamCreated() {
        consumer.liveStreams += 1
    }

    /// A `messages` stream was released. If it had been iterated, its iteration ended
    /// (break, return, cancellation) and the connection goes away with 1001; if not, the
    /// connection goes away only when nothing can use it any more (the handle is gone too).
    /// Returns whether to wake the loop.
    mutating func streamReleased(wasIterated: Bool) -> Bool {
        consumer.liveStreams = max(0, consumer.liveStreams - 1)
        if (wasIterated && !consumer.isScoped) || (consumer.isHandleReleased && consumer.liveStreams == 0) {
            return startClosing(CloseReason(code: .goingAway, reason: ""))
        }
        return false
    }

    /// The task iterating `messages` was cancelled: parked consumers end now, later ones
    /// get only what is already buffered, and the connection goes away with 1001.
    mutating func consumerCancelled() -> (consumers: [InboundQueue.Consumer], wake: Bool) {
        consumer.isCancelled = true
        return (inbound.takeConsumers().elementsAsArray, startClosing(CloseReason(code: .goingAway, reason: "")))
    }

    /// The connection belongs to a scope (``WebSocket/withConnection(to:configuration:eventLoop:isolation:_:)``)
    /// that closes it when it ends: an iteration of `messages` ending early (`first(where:)`,
    /// `break`) does not close it with 1001 then.
    var isScoped: Bool {
        get { consumer.isScoped }
        set { consumer.isScoped = newValue }
    }

    /// The user's `WebSocket` handle was released. A `messages` stream may still be in use
    /// (Swift may release the handle right after its last use, `connection.messages`); once
    /// no stream is left either, nobody can use the connection and it goes away with 1001.
    mutating func handleReleased() -> Bool {
        consumer.isHandleReleased = true
        guard consumer.liveStreams == 0 else { return false }
        return startClosing(CloseReason(code: .goingAway, reason: ""))
    }
}
