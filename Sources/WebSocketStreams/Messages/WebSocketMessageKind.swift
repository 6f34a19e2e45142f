/// Whether a message is text (valid UTF-8, opcode 0x1) or binary (opcode 0x2): the kind
/// of a message read or sent in pieces (``WebSocketIncomingMessage``,
/// ``WebSocket/send(streaming:as:)``).
public enum WebSocketMessageKind: Sendable, Hashable {
    /// A text message: its pieces together are valid UTF-8.
    case text
    /// A binary message.
    case binary
}
