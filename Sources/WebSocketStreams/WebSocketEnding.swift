/// How a connection ended, as one value: who started the end, the close code and reason,
/// the error if it was a failure, and the messages that never went out.
///
/// ```swift
/// for await message in connection.messages { handle(message) }
/// if let ending = connection.ending {
///     switch ending.initiator {
///     case .peer: print("the server closed:", ending.closeCode, ending.closeReason)
///     case .local: print("we closed:", ending.closeCode)
///     case .connectionLost: print("lost:", ending.error?.description ?? "?")
///     }
///     if !ending.unsentMessages.isEmpty { print(ending.unsentMessages.count, "messages not sent") }
/// }
/// ```
public struct WebSocketEnding: Sendable, Hashable {
    /// Who started the end of the connection.
    public enum Initiator: Sendable, Hashable {
        /// This side: its close frame went out before any from the peer
        /// (``WebSocket/close(code:reason:)``, the end of the stream's iteration), it failed
        /// the connection (a protocol violation, a message too large, a missing pong), or it
        /// dropped a close that could not finish.
        case local
        /// The peer's close frame came first (also when this side had asked to close but its
        /// frame was still queued behind messages).
        case peer
        /// Neither: the connection was lost without a close frame (1006).
        case connectionLost
    }

    /// Who started the end.
    public let initiator: Initiator
    /// The close code: the peer's, this side's, or 1006 when no close frame was exchanged.
    public let closeCode: WebSocketCloseCode
    /// The reason text that came with ``closeCode`` (empty when none).
    public let closeReason: String
    /// The failure that ended the connection, if it was one (`nil` after a close handshake).
    public let error: WebSocketError?
    /// Messages accepted by `send` that the peer never acknowledged (see `WebSocket.unsentMessages`).
    public let unsentMessages: [WebSocketMessage]

    /// Creates an ending (the SDK makes these; tests of your own code may too).
    public init(
        initiator: Initiator, closeCode: WebSocketCloseCode, closeReason: String, error: WebSocketError?,
        unsentMessages: [WebSocketMessage]
    ) {
        self.initiator = initiator
        self.closeCode = closeCode
        self.closeReason = closeReason
        self.error = error
        self.unsentMessages = unsentMessages
    }
}

extension WebSocketEnding: CustomStringConvertible {
    /// One line, e.g. `closed by the peer: 1000 (normal closure) "bye"`, `closed by this
    /// side: 1009 (message too big); message larger than the 1024-byte limit; ...` or
    /// `connection lost: 1006 (abnormal closure); connection failed: connection reset by peer;
    /// 2 messages not sent`.
    public var description: String {
        let who = switch initiator {
        case .peer: "closed by the peer"
        case .local: "closed by this side"
        case .connectionLost: "connection lost"
        }
        var line = "\(who): \(closeCode)"
        if !closeReason.isEmpty { line += " \(closeReason.debugDescription)" }
        if let error { line += "; \(error)" }
        if !unsentMessages.isEmpty {
            line += "; \(unsentMessages.count) message\(unsentMessages.count == 1 ? "" : "s") not sent"
        }
        return line
    }
}
