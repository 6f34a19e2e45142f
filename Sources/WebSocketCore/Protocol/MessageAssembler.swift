import FoundationEssentials

/// Turns the bytes a server sends into ``InboundEvent``s: frames are decoded by
/// ``FrameDecoder``, data frames gathered into messages (decompressed when
/// permessage-deflate is on), text validated as it arrives, control frames reported.
///
/// A pure value apart from the zlib stream it may own: it does no I/O, keeps no clock,
/// and is tested by feeding it bytes. The first broken rule ends it with a
/// ``ProtocolFailure`` carrying the close code to send:
/// - 1002: continuation rules (RFC 6455 5.4), RSV1 without a negotiated extension or on
///   a continuation or control frame (RFC 7692 6.1), and everything ``FrameDecoder`` checks;
/// - 1007: text that is not UTF-8, failing on the first bad byte even mid-frame;
/// - 1009: a message over ``maxMessageSize``, failing at the header that announces it
///   (uncompressed) or as inflation passes the limit (compressed, never allocating past it),
///   or in more than ``maxFragments`` frames, failing at the header of the one too many.
///
/// A whole unfragmented, uncompressed message that arrives in one chunk is built straight
/// from that chunk: one copy, one allocation (none for short text).
///
/// Streamed (``Streaming``), a message is not gathered: each piece of payload is handed on
/// as it arrives, as a `.message` event of the message's kind that is never empty (text
/// pieces end on a code point boundary, up to 3 bytes carried to the next), and an empty
/// one of the same kind ends the message. The size limit is the streamed one.
package struct MessageAssembler {
    /// How streamed messages are limited; `nil` gathers each message whole.
    package struct Streaming: Sendable {
        /// The largest message accepted (after decompression).
        package var maxMessageSize: Int
        package init(maxMessageSize: Int) { self.maxMessageSize = maxMessageSize }
    }

    enum Kind { case text, binary }

    /// The message being gathered from several frames (or several chunks).
    struct Partial {
        var kind: Kind
        var isCompressed: Bool
        var fragments = 1
        /// Payload bytes handed on so far (streamed only).
        var streamedBytes = 0
    }

    package let maxMessageSize: Int
    /// The most frames one message may arrive in.
    package let maxFragments: Int
    private var decoder = FrameDecoder()
    private let inflater: (any MessageDecompressor)?
    /// Where small binary payloads are copied (one allocation per message, not two).
    private let arena = PayloadArena()
    /// The frame whose payload is arriving.
    private var frame: FrameHeader?
    var partial: Partial?
    /// Payload of ``partial`` so far (decompressed when compressed), except an
    /// uncompressed binary message's, which goes straight into ``binaryPayload``.
    var payload: [UInt8] = []
    /// An uncompressed binary message gathered where it will be delivered: no copy at the end.
    private var binaryPayload = Data()
    /// How much of ``payload`` the UTF-8 validator has seen (text only).
    var validatedCount = 0
    var validator = UTF8Validator()
    /// Payload of the control frame in progress (at most 125 bytes).
    private var control: [UInt8] = []
    /// Set after a close frame or a failure: later bytes are ignored.
    package private(set) var isFinished = false
    /// Set when messages are streamed rather than gathered.
    package let streaming: Streaming?
    /// The end of a streamed text piece that stops inside a code point (at most 3 bytes).
    var carry: [UInt8] = []

    /// - Parameters:
    ///   - maxMessageSize: The largest message accepted, after decompression.
    ///   - inflater: The negotiated permessage-deflate decompressor, or `nil` when
    ///     compression is off (then RSV1 is a protocol error).
    ///   - maxFragments: The most frames one message may come in (each costs work
    ///     however small: a limit keeps a peer from sending a message a byte per frame forever).
    ///   - streaming: Hand each message on in pieces as it arrives, within its own limit.
    package init(
        maxMessageSize: Int, maxFragments: Int = .max, inflater: (any MessageDecompressor)? = nil,
        streaming: Streaming? = nil
    ) {
        self.streaming = streaming
        self.maxMessageSize = streaming?.maxMessageSize ?? maxMessageSize
        self.maxFragments = maxFragments
        self.inflater = inflater
    }

    /// Reads `bytes`, appending what they complete to `events`; returns how many bytes
    /// it consumed. With `stopAfterMessage` it returns right after the first whole message,
    /// so a caller whose consumer is full can keep the rest for later; otherwise it
    /// consumes everything (after a close frame or a failure, the rest is ignored).
    @discardableResult
    package mutating func read(_ bytes: UnsafeRawBufferPointer, into events: inout [InboundEvent], stopAfterMessage: Bool = false) -> Int {
        read(bytes, into: &events, messageLimit: stopAfterMessage ? 1 : .max, byteLimit: .max)
    }

    /// Reads `bytes` like ``read(_:into:stopAfterMessage:)``, returning right after the
    /// message that reaches `messageLimit` messages or `byteLimit` message bytes in this
    /// call (the room a consumer's buffer has left).
    @discardableResult
    package mutating func read(
        _ bytes: UnsafeRawBufferPointer, into events: inout [InboundEvent], messageLimit: Int, byteLimit: Int
    ) -> Int {
        guard !isFinished else { return bytes.count }
        arena.isEnabled = bytes.count >= PayloadArena.worthwhileChunk
        defer {
            arena.retire()
            if partial == nil { inflater?.pausedBetweenMessages() }
        }
        var messages = 0
        var messageBytes = 0
        var input = bytes
        do throws(ProtocolFailure) {
            while let piece = try decoder.next(from: &input) {
                switch piece {
                case .header(let header):
                    try begin(header)
                case .payload(let payload, let endOfFrame):
                    let eventsBefore = events.count
                    try consume(payload, endOfFrame: endOfFrame, into: &events)
                    if isFinished { return bytes.count }
                    var reachedLimit = false
                    for event in events[eventsBefore...] {
                        guard case .message(let message) = event else { continue }
                        messages += 1
                        messageBytes += message.byteCount
                        reachedLimit = messages >= messageLimit || messageBytes >= byteLimit
                    }
                    if reachedLimit { return bytes.count - input.count }
                }
            }
        } catch {
            fail(error, into: &events)
        }
        return bytes.count
    }

    // MARK: - Frames

    private mutating func begin(_ header: FrameHeader) throws(ProtocolFailure) {
        frame = header
        switch header.opcode {
        case .close, .ping, .pong:
            if header.isCompressed { throw .protocolError("a control frame has RSV1 set") }
            control.removeAll(keepingCapacity: true)
        case .continuation:
            guard var partial else { throw .protocolError("a continuation frame arrived with no message to continue") }
            if header.isCompressed { throw .protocolError("a continuation frame has RSV1 set") }
            partial.fragments += 1
            if partial.fragments > maxFragments { throw .tooManyFragments(limit: maxFragments) }
            self.partial = partial
            if !partial.isCompressed { try checkLength(adding: header.payloadLength) }
        case .text, .binary:
            if partial != nil { throw .protocolError("a new message began before the previous one finished") }
            if header.isCompressed, inflater == nil {
                throw .protocolError("a frame has RSV1 set but no extension was negotiated")
            }
            if !header.isCompressed { try checkLength(adding: header.payloadLength) }
            partial = Partial(kind: header.opcode == .text ? .text : .binary, isCompressed: header.isCompressed)
            validator = UTF8Validator()
            validatedCount = 0
            carry.removeAll(keepingCapacity: true)
        }
    }

    private func checkLength(adding length: UInt64) throws(ProtocolFailure) {
        let held = streaming == nil ? payload.count + binaryPayload.count : partial?.streamedBytes ?? 0
        if UInt64(held) + length > UInt64(maxMessageSize) { throw .tooBig(limit: maxMessageSize) }
    }

    private mutating func consume(
        _ bytes: UnsafeRawBufferPointer, endOfFrame: Bool, into events: inout [InboundEvent]
    ) throws(ProtocolFailure) {
        guard let header = frame else { return }
        if header.opcode.isControl {
            control.append(contentsOf: bytes)
            if endOfFrame { try finishControlFrame(header.opcode, into: &events) }
            return
        }
        guard let message = partial else { return }
        let endOfMessage = endOfFrame && header.isFinal
        if streaming != nil {
            try stream(bytes, of: message, endOfMessage: endOfMessage, into: &events)
            if endOfFrame { frame = nil }
            return
        }
        if message.isCompressed {
            try inflate(bytes, endOfMessage: endOfMessage)
        } else if endOfMessage, payload.isEmpty, binaryPayload.isEmpty {
            // The whole message is in `bytes`: build it from there.
            partial = nil
            frame = nil
            events.append(.message(try makeMessage(message.kind, from: bytes)))
            return
        } else if message.kind == .binary {
            if binaryPayload.isEmpty {
                binaryPayload.reserveCapacity(min(maxMessageSize, Int(clamping: header.payloadLength)))
            }
            binaryPayload.append(bytes.assumingMemoryBound(to: UInt8.self))
        } else {
            if message.kind == .text, !validator.validate(bytes) { throw .invalidPayload("invalid UTF-8 in a text message") }
            if payload.isEmpty {
                // The frame's length is known (and within the limit): one allocation for it.
                payload.reserveCapacity(min(maxMessageSize, Int(clamping: header.payloadLength)))
            }
            payload.append(contentsOf: bytes)
            validatedCount = payload.count
        }
        if endOfFrame { frame = nil }
        if endOfMessage { try finishMessage(message.kind, into: &events) }
    }

    mutating func inflate(_ bytes: UnsafeRawBufferPointer, endOfMessage: Bool) throws(ProtocolFailure) {
        guard let inflater else { return }
        // Streamed, `payload` holds only this piece: the limit is what the message has left.
        let limit = maxMessageSize - (partial?.streamedBytes ?? 0)
        var outcome = inflater.inflate(bytes, into: &payload, limit: limit)
        // The text inflated before a failure is checked first, so the first broken rule
        // wins however the payload was split into pieces.
        try validateInflatedText()
        if case .ok = outcome, endOfMessage {
            outcome = inflater.finishMessage(into: &payload, limit: limit)
            try validateInflatedText()
        }
        switch outcome {
        case .ok: break
        case .tooLarge: throw .tooBig(limit: maxMessageSize)
        case .corrupt(let reason): throw .invalidPayload("a compressed message could not be inflated: \(reason)")
        }
    }

    /// Validates the text inflated since the last check (text messages only).
    private mutating func validateInflatedText() throws(ProtocolFailure) {
        guard partial?.kind == .text, validatedCount < payload.count else { return }
        let valid = payload.withUnsafeBytes { all in
            validator.validate(UnsafeRawBufferPointer(rebasing: all[validatedCount...]))
        }
        if !valid { throw .invalidPayload("invalid UTF-8 in a text message") }
        validatedCount = payload.count
    }

    private mutating func finishMessage(_ kind: Kind, into events: inout [InboundEvent]) throws(ProtocolFailure) {
        partial = nil
        if kind == .text, !validator.isComplete { throw .invalidPayload("a text message ends inside a UTF-8 sequence") }
        let message: MessageContent
        switch kind {
        case .text: message = .text(String(decoding: payload, as: UTF8.self))
        case .binary where !binaryPayload.isEmpty:
            message = .binary(binaryPayload)
            binaryPayload = Data()
        case .binary: message = .binary(Data(payload))
        }
        // Keep a small buffer for the next message; give a large one back.
        if payload.capacity > 64 * 1024 { payload = [] } else { payload.removeAll(keepingCapacity: true) }
        validatedCount = 0
        events.append(.message(message))
    }

    private func makeMessage(_ kind: Kind, from bytes: UnsafeRawBufferPointer) throws(ProtocolFailure) -> MessageContent {
        switch kind {
        case .binary:
            return .binary(arena.data(copying: bytes))
        case .text:
            guard let text = String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
                // The same reason as when the message arrives in pieces: a valid prefix
                // that stops inside a code point is a truncated message.
                var validator = UTF8Validator()
                if validator.validate(bytes) { throw .invalidPayload("a text message ends inside a UTF-8 sequence") }
                throw .invalidPayload("invalid UTF-8 in a text message")
            }
            return .text(text)
        }
    }

    private mutating func finishControlFrame(_ opcode: FrameOpcode, into events: inout [InboundEvent]) throws(ProtocolFailure) {
        frame = nil
        switch opcode {
        case .ping: events.append(.ping(control))
        case .pong: events.append(.pong(control))
        case .close:
            let parsed = control.withUnsafeBytes { bytes in
                Result { () throws(ProtocolFailure) in try CloseFrame(parsing: bytes) }
            }
            let close = try parsed.get()
            isFinished = true
            events.append(.close(close))
        default: break
        }
    }

    private mutating func fail(_ failure: ProtocolFailure, into events: inout [InboundEvent]) {
        isFinished = true
        payload = []
        binaryPayload = Data()
        carry = []
        partial = nil
        events.append(.failure(failure))
    }
}
