import FoundationEssentials

/// A message accepted by `send`, with how it may be written.
struct OutgoingMessage: Sendable, Equatable {
    var message: WebSocketMessage
    /// Whether permessage-deflate may compress it: `false` when its `send` opted out
    /// (``WebSocket/send(_:compress:)``). Messages under the threshold are not compressed either way.
    var mayCompress = true

    var byteCount: Int { message.byteCount }

    /// A text message that may be compressed.
    static func text(_ string: String) -> OutgoingMessage { OutgoingMessage(message: .text(string)) }

    /// A binary message that may be compressed.
    static func binary(_ data: Data) -> OutgoingMessage { OutgoingMessage(message: .binary(data)) }
}
