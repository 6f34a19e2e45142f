import FoundationEssentials

extension WebSocket {
    /// The messages the peer sends, in order, each one read in pieces as it arrives
    /// (``WebSocketIncomingMessage``): for messages too large to hold, on a connection
    /// with ``WebSocketConfiguration/streamsIncomingMessages`` on. On other connections
    /// each message arrives whole, as one piece.
    ///
    /// Everything else is as for ``messages``: flow control, the end, and ending the
    /// iteration closes the connection with 1001. Asking for the next message skips what
    /// is left of the current one. Iterate it once, in one task, and read each message
    /// in that task.
    ///
    /// ```swift
    /// for await message in connection.messageStreams {
    ///     var size = 0
    ///     for try await piece in message { size += piece.count }
    ///     print(message.kind, size, "bytes")
    /// }
    /// ```
    public var messageStreams: AsyncStream<WebSocketIncomingMessage> {
        let reader = StreamedMessageReader(connection: connection)
        return AsyncStream(unfolding: { await reader.nextMessage() })
    }
}

extension WebSocket {
    /// Sends one message made of `pieces`, as they come: for messages too large to hold
    /// (a file, a dump), or produced over time.
    ///
    /// Each piece goes out as one or more frames of the message as soon as it comes, and an
    /// empty final frame ends the message when `pieces` does. Pieces wait for room as ``send(_:)`` does, behind
    /// ``WebSocketConfiguration/maxBufferedSendBytes``, so memory stays bounded whatever
    /// the message's size. While the message is being sent, other messages (from any task)
    /// wait for it to finish; pings, pongs and the close frame may go between its frames.
    /// The pieces are not compressed; an empty sequence sends an empty message.
    ///
    /// A message started cannot be taken back: if `pieces` throws, the task is cancelled
    /// while waiting for room, or (for `.text`) the pieces are not UTF-8, after some of
    /// it went out, the connection is closed with 1011 and the error is thrown.
    ///
    /// ```swift
    /// let pieces = AsyncStream<Data> { continuation in
    ///     for row in dump.rows { continuation.yield(row.encoded) }
    ///     continuation.finish()
    /// }
    /// try await connection.send(streaming: pieces, as: .binary)
    /// ```
    ///
    /// - Throws: what ``send(_:)`` throws; what `pieces` throws;
    ///   ``WebSocketError/Code/invalidMessage`` when text pieces are not UTF-8.
    nonisolated(nonsending)
    public func send<Pieces: AsyncSequence>(streaming pieces: Pieces, as kind: WebSocketMessageKind = .binary) async throws
    where Pieces.Element == Data {
        try await connection.send(streaming: pieces, as: kind)
    }
}
