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

    // MARK: - One reader at a time

    /// `reader` (an iteration of `messages`, or a `receive()` call) starts taking messages.
    /// Returns `false` when another reader holds the connection: messages must never be
    /// split between two readers without anyone noticing.
    mutating func claimReading(by reader: UInt64) -> Bool {
        if let current = consumer.reader, current != reader { return false }
        consumer.reader = reader
        consumer.isReceiveCancelled = false
        return true
    }

    /// `reader` is done (its iteration was released, or its `receive()` returned).
    mutating func releaseReading(by reader: UInt64) {
        if consumer.reader == reader { consumer.reader = nil }
    }

    /// The task in `receive()` was cancelled: its parked continuation (the only one, as there
    /// is one reader) stops waiting; the connection stays open and nothing is lost.
    mutating func receiveCancelled() -> [InboundQueue.Consumer] {
        consumer.isReceiveCancelled = true
        return inbound.takeConsumers().elementsAsArray
    }

    /// The connection ends because it was used in a way it does not allow (a misuse of
    /// the API, or a message the application could not use): `error` becomes the
    /// connection's ``WebSocket/error`` at once, and the close frame (`code`, `reason`)
    /// goes out behind the messages already accepted. Returns whether to wake the loop.
    mutating func closeFailing(with error: WebSocketError, code: WebSocketCloseCode, reason: String) -> Bool {
        let wake = startClosing(CloseReason(code: code, reason: reason))
        if case .closing(var closing) = state, closing.failure == nil {
            closing.failure = error
            if closing.initiator == nil { closing.initiator = .local }
            state = .closing(closing)
        }
        return wake
    }

    /// The error that ends (or ended) the connection: the ending's, or while closing, the
    /// failure this side is ending it for.
    var error: WebSocketError? {
        switch state {
        case .closed(let ending): ending.error
        case .closing(let closing): closing.failure
        case .connecting, .open: nil
        }
    }
}
