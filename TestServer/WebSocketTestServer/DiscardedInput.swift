/// The client's messages in what a connection held unread when the server dropped it: the
/// bytes read out of its socket at the drop (decrypted over TLS), decoded as client frames,
/// after the message libwebsockets had begun delivering, if any.
///
/// A pure value: the I/O that reads the socket dry is ``ServerConnection/discardInputAtDrop(_:)``.
struct DiscardedInput {
    /// A whole message found in the bytes.
    struct Message: Equatable {
        var binary: Bool
        /// The payload, or `nil` when it cannot be read here: a compressed message (its
        /// inflater's window is libwebsockets'), or one whose current frame libwebsockets had
        /// begun to parse (the rest of that frame is masked with a key only it holds).
        var payload: [UInt8]?
    }

    /// The message libwebsockets had begun delivering when the connection was dropped.
    struct InProgress: Equatable {
        var binary: Bool
        /// The payload delivered so far.
        var payload: [UInt8]
        /// Payload bytes of the frame being parsed that libwebsockets had not read yet
        /// (`lws_remaining_packet_payload`): the first bytes of the input.
        var remainingInFrame: Int
    }

    /// Whole messages, in the order they arrived.
    private(set) var messages: [Message] = []
    /// Whether the input ends inside a message: its start had arrived, not its end.
    private(set) var endsInsideMessage = false
    /// Bytes that are not client frames, from the first such byte on (e.g. a frame header
    /// libwebsockets had begun to parse before the drop, or a frame breaking RFC 6455).
    private(set) var undecodedByteCount = 0

    /// The message being assembled: its type, whether it is compressed, and its payload so far
    /// (`nil` once a part of it cannot be read).
    private var current: (binary: Bool, compressed: Bool, payload: [UInt8]?)?

    /// Decodes `bytes`, read from the socket after libwebsockets delivered what it had read,
    /// continuing `inProgress` when a message had begun.
    init(decoding bytes: [UInt8], continuing inProgress: InProgress? = nil) {
        var start = 0
        if let inProgress {
            guard inProgress.remainingInFrame <= bytes.count else {
                endsInsideMessage = true
                return
            }
            start = inProgress.remainingInFrame
            let readable = inProgress.remainingInFrame == 0
            current = (inProgress.binary, false, readable ? inProgress.payload : nil)
            if !readable, Self.startsNewMessage(bytes[start...]) {
                // The frame lws was parsing ended the message (the next one starts anew).
                finishMessage()
            }
        }
        var reader = ClientFrameReader()
        bytes[start...].withUnsafeBytes { reader.append($0) }
        while true {
            let unconsumed = reader.unconsumedByteCount
            guard let frame = reader.nextFrame() else { break }
            guard accept(frame) else {
                undecodedByteCount = unconsumed
                endsInsideMessage = true
                return
            }
        }
        undecodedByteCount = reader.unconsumedByteCount
        if current != nil || undecodedByteCount > 0 { endsInsideMessage = true }
    }

    /// Takes one frame; `false` when it cannot be a client's frame here.
    private mutating func accept(_ frame: ClientFrameReader.Frame) -> Bool {
        let reservedBits = frame.firstByte & 0x70
        guard frame.masked else { return false }
        switch frame.opcode {
        case 0x8, 0x9, 0xA:
            // Control frames (a close, a ping, a pong) may come between a message's frames.
            return reservedBits == 0 && frame.fin
        case 0x1, 0x2:
            // RSV1 marks a compressed (permessage-deflate) message, on its first frame only.
            guard current == nil, reservedBits & 0x30 == 0 else { return false }
            let compressed = reservedBits & 0x40 != 0
            current = (frame.opcode == 0x2, compressed, compressed ? nil : frame.payload)
        case 0x0:
            guard current != nil, reservedBits == 0 else { return false }
            if current?.payload != nil { current?.payload?.append(contentsOf: frame.payload) }
        default:
            return false
        }
        if frame.fin { finishMessage() }
        return true
    }

    private mutating func finishMessage() {
        guard let current else { return }
        messages.append(Message(binary: current.binary, payload: current.payload))
        self.current = nil
    }

    /// Whether the first frame header in `bytes` (past any control frames) opens a new data
    /// message, which means the frame before it ended the previous one.
    private static func startsNewMessage(_ bytes: ArraySlice<UInt8>) -> Bool {
        var reader = ClientFrameReader()
        bytes.withUnsafeBytes { reader.append($0) }
        while let frame = reader.nextFrame() {
            if frame.opcode >= 0x8 { continue }
            return frame.opcode == 0x1 || frame.opcode == 0x2
        }
        return false
    }
}
