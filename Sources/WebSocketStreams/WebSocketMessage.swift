import FoundationEssentials
import WebSocketCore
import WebSocketCore

/// One complete WebSocket data message, as received from or sent to the peer.
///
/// Fragmented messages arrive reassembled; control frames (ping, pong, close) are
/// handled by the connection and never appear here.
///
/// ```swift
/// for await message in connection.messages {
///     switch message {
///     case .text(let string): print("text:", string)
///     case .binary(let data): print("binary:", data.count, "bytes")
///     }
/// }
/// ```
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message (opcode 0x1), valid UTF-8.
    case text(String)
    /// A binary message (opcode 0x2).
    case binary(Data)

    /// The number of payload bytes the message occupies on the wire before compression.
    public var byteCount: Int {
        switch self {
        case .text(let string): string.utf8.count
        case .binary(let data): data.count
        }
    }
}

extension WebSocketMessage: CustomStringConvertible {
    /// A short description, e.g. `text("hello")` or `binary(3 bytes)`.
    public var description: String {
        switch self {
        case .text(let string):
            let preview = string.count > 64 ? String(string.prefix(64)) + "…" : string
            return "text(\(preview.debugDescription))"
        case .binary(let data):
            return "binary(\(data.count) bytes)"
        }
    }
}

extension WebSocketMessage {
    /// Text or binary.
    var kind: WebSocketMessageKind {
        if case .text = self { .text } else { .binary }
    }

    /// The opcode of the message's first frame.
    var opcode: FrameOpcode {
        if case .text = self { .text } else { .binary }
    }

    /// Calls `body` with the payload's bytes (a text's UTF-8, a binary's data).
    func withPayloadBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        switch self {
        case .text(var string): try string.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
        case .binary(let data): try data.withUnsafeBytes(body)
        }
    }
}

extension WebSocketMessage {
    /// The message the codec read, as users get it: moves the `String` or `Data`, copies no
    /// payload. `package`: the benchmark hooks hand messages on the same way.
    package init(_ content: MessageContent) {
        switch content {
        case .text(let string): self = .text(string)
        case .binary(let data): self = .binary(data)
        }
    }
}
