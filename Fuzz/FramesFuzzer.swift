import WebSocketCore

/// libFuzzer target for the receive path: ``FrameDecoder`` and ``MessageAssembler``, with
/// and without permessage-deflate (``MessageInflater``).
///
/// Input layout: a flags byte (bit 0: compression negotiated; bit 1: the server uses no
/// context takeover; bit 2: a small message limit instead of 64 KiB; bit 3: at most 1-16
/// frames per message instead of no limit; bit 4: messages streamed in pieces), the small
/// limits' byte (the size limit is 8 times it, the fragment limit 1 + it modulo 16), a
/// ``ChunkPlan``, then the bytes a server sends.
///
/// The stream is read three ways: in one piece, in the planned chunks, and in the planned
/// chunks with `stopAfterMessage` (the transport's way, re-reading what a call left).
/// All three must give the same events and end in the same state, and every event must
/// keep the assembler's promises (see ``checkEvents(_:isFinished:limit:)``). Streamed, the
/// pieces depend on the chunks: each reading's pieces, joined into messages, must equal the
/// events of a whole-message assembler with the same limits, and every piece must keep the
/// streaming promises (see ``checkPieces(_:)``).

/// The assembler's settings decoded from the input's first bytes.
private struct FramesSetup {
    var compression: Bool
    var parameters = DeflateParameters()
    var maxMessageSize: Int
    var maxFragments: Int
    var streams: Bool

    init(flags: UInt8, limitByte: UInt8) {
        streams = flags & 16 != 0
        compression = flags & 1 != 0
        parameters.serverNoContextTakeover = flags & 2 != 0
        maxMessageSize = flags & 4 != 0 ? Int(limitByte) * 8 : 1 << 16
        maxFragments = flags & 8 != 0 ? Int(limitByte % 16) + 1 : .max
    }

    func makeAssembler(streaming: Bool? = nil) -> MessageAssembler {
        MessageAssembler(
            maxMessageSize: maxMessageSize, maxFragments: maxFragments,
            inflater: compression ? MessageInflater(parameters: parameters) : nil,
            streaming: streaming ?? streams ? MessageAssembler.Streaming(maxMessageSize: maxMessageSize) : nil
        )
    }
}

/// What one way of reading the stream produced.
private struct FramesOutcome: Equatable {
    var events: [InboundEvent] = []
    var isFinished = false
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let setup = FramesSetup(flags: input.byte(), limitByte: input.byte())
    let plan = input.chunkPlan()
    let stream = input.remaining
    let chunks = plan.chunks(of: stream)

    if setup.streams {
        var reference = setup
        reference.streams = false
        let expected = read(reference, [stream], stopAfterMessage: false)
        for (name, outcome) in [
            ("one piece", read(setup, [stream], stopAfterMessage: false)),
            ("chunks", read(setup, chunks, stopAfterMessage: false)),
            ("stopAfterMessage in chunks", read(setup, chunks, stopAfterMessage: true)),
        ] {
            checkPieces(outcome.events)
            check(joined(outcome.events) == expected.events,
                  "streamed (\(name), \(plan.sizes)) and whole differ:\n  \(joined(outcome.events))\n  \(expected.events)")
            check(outcome.isFinished == expected.isFinished, "streamed (\(name)) ends finished: \(outcome.isFinished)")
        }
        return 0
    }
    let whole = read(setup, [stream], stopAfterMessage: false)
    let chunked = read(setup, chunks, stopAfterMessage: false)
    let paced = read(setup, chunks, stopAfterMessage: true)
    check(whole == chunked, "one piece and chunks \(plan.sizes) differ:\n  \(whole)\n  \(chunked)")
    check(whole == paced, "one piece and stopAfterMessage in chunks \(plan.sizes) differ:\n  \(whole)\n  \(paced)")
    checkEvents(whole.events, isFinished: whole.isFinished, limit: setup.maxMessageSize)
    return 0
}

/// Feeds `chunks` to a new assembler, checking what each `read` returns.
private func read(_ setup: FramesSetup, _ chunks: [UnsafeRawBufferPointer], stopAfterMessage: Bool) -> FramesOutcome {
    var assembler = setup.makeAssembler()
    var outcome = FramesOutcome()
    for chunk in chunks {
        var rest = chunk
        repeat {
            let wasFinished = assembler.isFinished
            let eventsBefore = outcome.events.count
            let consumed = assembler.read(rest, into: &outcome.events, stopAfterMessage: stopAfterMessage)
            let added = outcome.events[eventsBefore...]
            check((0...rest.count).contains(consumed), "read \(rest.count) bytes but reports \(consumed)")
            check(!wasFinished || added.isEmpty, "events after the end: \(added)")
            if consumed < rest.count {
                check(stopAfterMessage, "read stopped after \(consumed) of \(rest.count) bytes unasked")
                check(consumed > 0, "read made no progress on \(rest.count) bytes")
                check(!assembler.isFinished, "read stopped early although finished")
                if case .message = added.last {} else { check(false, "read stopped early without a message: \(added)") }
            }
            if stopAfterMessage {
                // Streamed, the piece that ends a message comes with its end (an empty piece).
                let messages = added.filter {
                    if case .message(let message) = $0 { !setup.streams || message.byteCount > 0 } else { false }
                }
                check(messages.count <= 1, "stopAfterMessage returned \(messages.count) messages")
            }
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
        } while !rest.isEmpty
    }
    outcome.isFinished = assembler.isFinished
    return outcome
}

/// The promises every event list keeps: a close or a failure comes last and only then is
/// the assembler finished; messages fit the limit; control payloads fit 125 bytes; close
/// codes are ones a peer may send; failures carry 1002, 1007 or 1009.
private func checkEvents(_ events: [InboundEvent], isFinished: Bool, limit: Int) {
    for (index, event) in events.enumerated() {
        let isLast = index == events.count - 1
        switch event {
        case .message(let message):
            check(message.byteCount <= limit, "a \(message.byteCount)-byte message passed the \(limit)-byte limit")
        case .ping(let payload), .pong(let payload):
            check(payload.count <= 125, "a \(payload.count)-byte control payload")
        case .close(let frame):
            check(isLast, "events after a close frame: \(events)")
            if let code = frame.wireCode {
                check(CloseFrame.mayBeReceived(code), "close code \(code) accepted")
            } else {
                check(frame.reason.isEmpty, "a reason without a close code")
            }
        case .failure(let failure):
            check(isLast, "events after a failure: \(events)")
            check([1002, 1007, 1009].contains(failure.wireCode), "failure with close code \(failure.wireCode)")
            check(!failure.reason.isEmpty && failure.description.hasPrefix("\(failure.wireCode): "), "\(failure)")
        }
    }
    let endsTheStream: Bool
    switch events.last {
    case .close?, .failure?: endsTheStream = true
    default: endsTheStream = false
    }
    check(isFinished == endsTheStream, "isFinished is \(isFinished) after \(String(describing: events.last))")
}

/// The promises of streamed pieces: none is empty but the one that ends a message; a text
/// piece is whole code points (it is a `String` built without repair, so its UTF-8 is the
/// bytes received); a message's pieces are all of its kind.
private func checkPieces(_ events: [InboundEvent]) {
    var kind: String?
    for event in events {
        guard case .message(let piece) = event else { continue }
        if let kind { check(piece.kindName == kind, "a \(piece.kindName) piece inside a \(kind) message") }
        kind = piece.byteCount == 0 ? nil : piece.kindName
        if case .text(let text) = piece {
            check(String(validating: Array(text.utf8), as: UTF8.self) == text, "a text piece that is not whole code points")
        }
    }
}

/// Streamed pieces joined into the messages they make; a message left unfinished (by a
/// failure or a close frame) is dropped, as a whole-message assembler never delivers it.
private func joined(_ events: [InboundEvent]) -> [InboundEvent] {
    var result: [InboundEvent] = []
    var open: MessageContent?
    for event in events {
        guard case .message(let piece) = event else {
            result.append(event)
            continue
        }
        guard piece.byteCount > 0 else {
            result.append(.message(open ?? piece))
            open = nil
            continue
        }
        switch (open, piece) {
        case (nil, _): open = piece
        case (.text(let before)?, .text(let more)): open = .text(before + more)
        case (.binary(let before)?, .binary(let more)): open = .binary(before + more)
        default: open = piece   // reported by checkPieces
        }
    }
    return result
}

extension MessageContent {
    /// "text" or "binary".
    fileprivate var kindName: String {
        if case .text = self { "text" } else { "binary" }
    }
}
