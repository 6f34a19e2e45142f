extension WebSocket {
    /// The messages the peer sends, in order, as batches: each holds every message buffered
    /// when the consumer asked, and at least one (the stream waits for it).
    ///
    /// For high-rate feeds (market data, telemetry) whose consumer can handle many messages
    /// at once: the stream's own cost is paid once per batch instead of once per message.
    /// Everything else is as for ``messages``: the same flow control (a batch holds at most
    /// about ``WebSocketConfiguration/maxBufferedMessages`` messages and
    /// ``WebSocketConfiguration/maxBufferedBytes`` bytes, and reading pauses while the
    /// consumer is behind), the same end, and ending the iteration closes the connection
    /// with 1001. Iterate one of `messages` and `messageBatches`, once, in one task.
    ///
    /// ```swift
    /// for await batch in connection.messageBatches {
    ///     book.apply(batch.compactMap(Update.init))
    /// }
    /// ```
    public var messageBatches: AsyncStream<[WebSocketMessage]> {
        let iteration = MessageIteration(
            connection: connection,
            rejection: connection.configuration.streamsIncomingMessages ? .messagesOfStreamingConnection : nil)
        return AsyncStream(unfolding: { await iteration.nextBatch() })
    }
}
