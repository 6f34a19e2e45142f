import FoundationEssentials

/// A whole data message (or, streamed, a piece of one) as the codec reads it: text or
/// binary. WebSocketStreams hands it to users as its public `WebSocketMessage`, a switch
/// that moves the `String` or `Data` (no copy of the payload).
package enum MessageContent: Sendable, Hashable {
    /// A text message (opcode 0x1), valid UTF-8.
    case text(String)
    /// A binary message (opcode 0x2).
    case binary(Data)

    /// The number of payload bytes before compression.
    package var byteCount: Int {
        switch self {
        case .text(let string): string.utf8.count
        case .binary(let data): data.count
        }
    }
}
