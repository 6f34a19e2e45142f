import FoundationEssentials

/// A message sent as a stream of pieces: each piece becomes one or more frames of the one
/// message, queued as room appears, with nothing else between them.
extension ClientConnection {
    nonisolated(nonsending)
    func send<Pieces: AsyncSequence>(streaming pieces: Pieces, as kind: WebSocketMessageKind) async throws
    where Pieces.Element == Data {
        var iterator = pieces.makeAsyncIterator()
        guard var piece = try await iterator.next(isolation: #isolation) else {
            try await send(kind == .text ? .text("") : .binary(Data()))
            return
        }
        var validator = UTF8Validator()
        var started = false
        do {
            while true {
                // One piece is held back, so the last one is known to be the last.
                let following = try await iterator.next(isolation: #isolation)
                if kind == .text {
                    let valid = piece.withUnsafeBytes { validator.validate($0) }
                    guard valid, following != nil || validator.isComplete else {
                        throw WebSocketError.invalidMessage("the pieces of a streamed text message are not UTF-8")
                    }
                }
                guard started || following != nil else {
                    // A single piece is a whole message (it may be compressed).
                    try await send(kind == .text ? .text(String(decoding: piece, as: UTF8.self)) : .binary(piece))
                    return
                }
                let position: OutgoingMessage.Position =
                    !started ? .first(kind) : following == nil ? .last(kind) : .middle
                try await enqueue(OutgoingMessage(message: .binary(piece), mayCompress: false, position: position))
                started = true
                guard let following else { return }
                piece = following
            }
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
