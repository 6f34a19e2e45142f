extension WebSocket {
    /// The next message the peer sends, waiting for it: one message at a time, for
    /// request/response code (like python websockets' `recv()`).
    ///
    /// It reads the same messages as ``messages``: a message is delivered once, to one
    /// of them. Unlike an iteration of `messages`, a call ends nothing: call it as often
    /// as you like, from a helper that returns after each answer, and the connection
    /// stays open.
    ///
    /// ```swift
    /// func ask(_ connection: WebSocket, _ question: String) async throws -> WebSocketMessage {
    ///     try await connection.send(.text(question))
    ///     return try await connection.receive()
    /// }
    /// let first = try await ask(connection, "ping 1")
    /// let second = try await ask(connection, "ping 2")   // same connection, still open
    /// ```
    ///
    /// One reader at a time: while a task iterates ``messages`` (from its first message
    /// until its iterator is released), or another `receive()` waits, `receive()` throws
    /// ``WebSocketError/Code/invalidUse`` at once and takes nothing.
    ///
    /// - Throws: once the connection has ended and every message it received has been
    ///   delivered, the error that ended it (``error``), else
    ///   ``WebSocketError/closed(code:reason:)`` with its close code (1000 for a clean
    ///   close); ``WebSocketError/Code/invalidUse`` while another reader reads;
    ///   `CancellationError` when the task is cancelled while waiting (the connection
    ///   stays open, and the next message waits for the next call).
    nonisolated(nonsending)
    public func receive() async throws -> WebSocketMessage {
        try await connection.receive()
    }
}
