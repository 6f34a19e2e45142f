import Foundation
import WebSocketStreams

/// A piece of a received message, as `--stream` prints it.
struct ReceivedPiece: Sendable {
    /// The message's kind.
    var kind: WebSocketMessageKind
    /// The piece's bytes (for text, whole code points); empty for the message's end.
    var bytes: Data
    /// 0 for the message's first piece; for its end, how many pieces there were.
    var index: Int
    /// The message's bytes so far, this piece included.
    var byteCount: Int
    /// Whether this is the message's end (after its last piece, with no bytes).
    var isLast: Bool
}
