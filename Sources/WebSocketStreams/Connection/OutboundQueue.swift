import DequeModule

/// Messages accepted by `send` and not yet handed to libwebsockets, with the senders
/// waiting for room.
///
/// `send` returns as soon as its message is accepted here. While at least
/// `highWatermark` bytes wait, further senders are parked (their messages not yet
/// accepted) and are let in, in order, once the loop thread has taken the queue
/// below `highWatermark / 2`.
///
/// A message sent as a stream (``OutgoingMessage/Position``) holds the queue from its
/// first piece to its last: no other message may go between its frames, so every other
/// sender (and the loop's heartbeat) waits until the last piece is accepted. The
/// stream's own pieces wait only for room, in a slot of their own.
struct OutboundQueue {
    typealias Sender = UnsafeContinuation<Void, any Error>

    struct ParkedSender {
        let id: UInt64
        let message: OutgoingMessage
        let continuation: Sender
    }

    let highWatermark: Int
    private var lowWatermark: Int { highWatermark / 2 }

    private var messages = Deque<OutgoingMessage>()
    private(set) var bytes = 0
    /// The queue's size when ``takeSizeChange()`` last looked (the metrics follow it).
    private var reportedBytes = 0
    private var parked = Deque<ParkedSender>()
    /// Senders cancelled before they parked; consulted when they try to park.
    private var cancelledBeforeParking = Set<UInt64>()
    /// Whether a streamed message's first piece is accepted and its last is not yet.
    private(set) var isHeldByStream = false
    /// The streamed message's next piece, waiting for room.
    private var parkedPiece: ParkedSender?
    /// The loop's own messages (heartbeats) that came while a stream held the queue.
    private var heldLoopMessages: [OutgoingMessage] = []

    init(highWatermark: Int) {
        self.highWatermark = max(1, highWatermark)
    }

    /// Senders waiting for room.
    var parkedCount: Int { parked.count + (parkedPiece == nil ? 0 : 1) }

    /// Whether nothing waits to be written.
    var isEmpty: Bool { messages.isEmpty }

    /// Whether a new message must wait for room.
    var isFull: Bool { !parked.isEmpty || bytes >= highWatermark || isHeldByStream }

    /// Whether `message` must wait: a streamed message's later pieces wait only for room;
    /// everything else also waits for the senders before it and for a stream to finish.
    func mustWait(_ message: OutgoingMessage) -> Bool {
        message.position.startsMessage ? isFull : bytes >= highWatermark
    }

    /// Accepts a message (the caller checked ``mustWait(_:)``).
    mutating func append(_ message: OutgoingMessage) {
        messages.append(message)
        bytes += message.byteCount
        switch message.position {
        case .first: isHeldByStream = true
        case .last:
            isHeldByStream = false
            for held in heldLoopMessages { append(held) }
            heldLoopMessages = []
        case .whole, .middle: break
        }
    }

    /// Accepts a message of the loop's own, whatever the limit; behind a stream that holds the queue.
    mutating func appendFromLoop(_ message: OutgoingMessage) {
        if isHeldByStream { heldLoopMessages.append(message) } else { append(message) }
    }

    enum ParkResult {
        case parked
        /// The sender was cancelled before it could park.
        case cancelled
        /// Room appeared meanwhile: the message was accepted.
        case accepted
    }

    /// Parks a sender whose message did not fit, unless it was cancelled or room appeared.
    mutating func park(id: UInt64, message: OutgoingMessage, continuation: Sender) -> ParkResult {
        if cancelledBeforeParking.remove(id) != nil { return .cancelled }
        if !mustWait(message) {
            append(message)
            return .accepted
        }
        let sender = ParkedSender(id: id, message: message, continuation: continuation)
        if message.position.startsMessage { parked.append(sender) } else { parkedPiece = sender }
        return .parked
    }

    /// Cancels a parked sender. Returns its continuation, or `nil` when it has not parked
    /// yet (it will see the cancellation when it does) or was already let in.
    mutating func cancel(id: UInt64) -> Sender? {
        if let index = parked.firstIndex(where: { $0.id == id }) {
            return parked.remove(at: index).continuation
        }
        if let piece = parkedPiece, piece.id == id {
            parkedPiece = nil
            return piece.continuation
        }
        cancelledBeforeParking.insert(id)
        return nil
    }

    /// Forgets a cancellation mark for a sender that finished without parking.
    mutating func forgetCancellation(id: UInt64) {
        cancelledBeforeParking.remove(id)
    }

    /// Takes messages for the loop thread to write, up to about `budget` bytes (always
    /// at least one), and lets in parked senders if the queue fell below the low watermark.
    mutating func take(budget: Int, into batch: inout [OutgoingMessage], admitted: inout [Sender]) {
        var taken = 0
        while let message = messages.first, batch.isEmpty || taken + message.byteCount <= budget {
            messages.removeFirst()
            taken += message.byteCount
            bytes -= message.byteCount
            batch.append(message)
        }
        if bytes <= lowWatermark, let piece = parkedPiece {
            parkedPiece = nil
            append(piece.message)
            admitted.append(piece.continuation)
        }
        while bytes <= lowWatermark, !isHeldByStream, let sender = parked.popFirst() {
            append(sender.message)
            admitted.append(sender.continuation)
        }
    }

    /// Empties the queue (the connection ended): the accepted messages never written, and
    /// the parked senders to fail (their messages were never accepted, so not in `unsent`).
    mutating func drain() -> (unsent: [WebSocketMessage], parked: [Sender]) {
        let unsent = messages.map(\.message)
        let senders = parked.map(\.continuation) + (parkedPiece.map { [$0.continuation] } ?? [])
        messages = []
        parked = []
        parkedPiece = nil
        heldLoopMessages = []
        bytes = 0
        cancelledBeforeParking = []
        return (unsent, senders)
    }

    /// Fails the parked senders (a close was requested) but keeps accepted messages,
    /// which are still written before the close frame.
    mutating func takeParkedSenders() -> [Sender] {
        defer {
            parked = []
            parkedPiece = nil
        }
        return parked.map(\.continuation) + (parkedPiece.map { [$0.continuation] } ?? [])
    }

    /// How many bytes the queue grew (negative: shrank) since the last call.
    mutating func takeSizeChange() -> Int {
        defer { reportedBytes = bytes }
        return bytes - reportedBytes
    }
}
