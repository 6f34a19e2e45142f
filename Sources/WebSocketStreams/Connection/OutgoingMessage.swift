import FoundationEssentials
import WebSocketCore

/// A message accepted by `send`, with how it may be written; or one piece of a message
/// sent as a stream (``WebSocket/send(streaming:as:)``), written as one or more frames
/// of that message.
struct OutgoingMessage: Sendable, Equatable {
    /// Where a piece sits in its message.
    enum Position: Sendable, Equatable {
        /// A whole message.
        case whole
        /// The first piece of a streamed message (its payload in a `.binary`).
        case first(WebSocketMessageKind)
        /// A piece after the first, with more to come.
        case middle
        /// The last piece (with the message's kind, for the metrics).
        case last(WebSocketMessageKind)

        /// Whether the piece starts its message (its first frame carries the opcode).
        var startsMessage: Bool {
            switch self {
            case .whole, .first: true
            case .middle, .last: false
            }
        }

        /// Whether the piece ends its message (its last frame carries FIN).
        var endsMessage: Bool {
            switch self {
            case .whole, .last: true
            case .first, .middle: false
            }
        }
    }

    var message: WebSocketMessage
    /// How its `send` asked for it to be sent.
    var options = SendOptions.default
    var position = Position.whole

    var byteCount: Int { message.byteCount }

    /// The opcode of the piece's first frame.
    var opcode: FrameOpcode {
        switch position {
        case .whole: message.opcode
        case .first(let kind): kind == .text ? .text : .binary
        case .middle, .last: .continuation
        }
    }

    /// A text message that may be compressed.
    static func text(_ string: String) -> OutgoingMessage { OutgoingMessage(message: .text(string)) }

    /// A binary message that may be compressed.
    static func binary(_ data: Data) -> OutgoingMessage { OutgoingMessage(message: .binary(data)) }
}
