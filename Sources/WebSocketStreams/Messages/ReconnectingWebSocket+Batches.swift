extension ReconnectingWebSocket {
    /// The messages of every connection in turn, as batches: each holds every message
    /// buffered on the current connection when the consumer asked, and at least one.
    ///
    /// As ``WebSocket/messageBatches`` is to ``WebSocket/messages``: the stream's own cost
    /// is paid once per batch. Everything else is as for ``messages``: messages of one
    /// connection before the next one's, the same flow control and the same end (ending
    /// the iteration closes the socket with 1001 for good). Iterate one of `messages` and
    /// `messageBatches`, once, in one task.
    public var messageBatches: AsyncStream<[WebSocketMessage]> {
        let iteration = ReconnectingIteration(storage: storage)
        return AsyncStream(unfolding: { await iteration.nextBatch() }, onCancel: { iteration.cancelled() })
    }
}
