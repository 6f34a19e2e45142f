import FoundationEssentials
import WebSocketCore

/// A message sent as a stream of pieces: each piece becomes one or more frames of the one
/// message, queued as room appears, with nothing else between them.
extension ClientConnection {
    nonisolated(nonsending)
    func send<Pieces: AsyncSequence>(streaming pieces: Pieces, as kind: WebSocketMessageKind) async throws
    where Pieces.Element == Data {
        var iterator = pieces.makeAsyncIterator()
        var validator = UTF8Validator()
        var started = false
        do {
            // Each piece goes out as it comes (a producer's piece is never held back waiting
            // for the next); an empty last frame ends the message once the sequence does.
            while let piece = try await iterator.next(isolation: #isolation) {
                if kind == .text, !piece.withUnsafeBytes({ validator.validate($0) }) {
                    throw WebSocketError.invalidMessage("the pieces of a streamed text message are not UTF-8")
                }
                let position: OutgoingMessage.Position = started ? .middle : .first(kind)
                try await enqueue(OutgoingMessage(message: .binary(piece), options: .uncompressed, position: position))
                started = true
            }
            guard started else {
                try await send(kind == .text ? .text("") : .binary(Data()))
                return
            }
            if kind == .text, !validator.isComplete {
                throw WebSocketError.invalidMessage("the pieces of a streamed text message end inside a UTF-8 sequence")
            }
            try await enqueue(OutgoingMessage(message: .binary(Data()), options: .uncompressed, position: .last(kind)))
        } catch {
            // Frames of the message are out and its end never will be: no other message
            // may follow them, so the connection ends.
            if started {
                await close(code: .internalServerError, reason: "a streamed message was abandoned")
            }
            throw error
        }
    }
}
