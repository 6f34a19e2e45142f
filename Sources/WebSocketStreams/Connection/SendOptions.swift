/// How one message is to be sent, carried with it from its `send` to the frame writer: in
/// ``OutgoingMessage`` on a connection, and in ``ReconnectingStorage/QueuedMessage`` while a
/// ``ReconnectingWebSocket`` waits for one. A per-message option is a field here, not one
/// more parameter threaded through every layer.
struct SendOptions: Sendable, Equatable {
    /// Whether permessage-deflate may compress the message: `false` when its `send` opted
    /// out (``WebSocket/send(_:compress:)``). Messages under the threshold are not
    /// compressed either way, nor are the pieces of a streamed message.
    var mayCompress = true

    /// A message sent as ``WebSocket/send(_:)`` sends it.
    static let `default` = SendOptions()
    /// A message never compressed: the pieces of a streamed message, and a message re-queued
    /// after a drop (whether its `send` opted out is not kept that far).
    static let uncompressed = SendOptions(mayCompress: false)
}
