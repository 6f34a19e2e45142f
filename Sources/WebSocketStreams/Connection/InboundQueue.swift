import DequeModule

/// Received messages waiting for the consumer of `messages`, with the high/low
/// watermarks that pause and resume reading from the socket.
///
/// A pure value, part of the state machine: it decides, the transport acts. Reading pauses when either
/// limit is reached and resumes once the consumer has drained the queue to a quarter of
/// both limits, so a slow consumer holds at most about one buffer's worth of data in
/// memory while the peer is held back by TCP flow control.
struct InboundQueue {
    typealias Consumer = UnsafeContinuation<WebSocketMessage?, Never>

    /// The pause limits: reading stops at `maxMessages` messages or `maxBytes` bytes.
    let maxMessages: Int
    let maxBytes: Int

    private var messages = Deque<WebSocketMessage>()
    private var bytes = 0
    private var consumers = Deque<Consumer>()
    /// Whether the socket's reading is paused because of this queue.
    private(set) var isReadingPaused = false
    /// The most bytes ever buffered at once: what the limits let a slow consumer cost.
    private(set) var peakBytes = 0

    init(maxMessages: Int, maxBytes: Int) {
        self.maxMessages = max(1, maxMessages)
        self.maxBytes = max(1, maxBytes)
    }

    /// Messages waiting for a consumer.
    var count: Int { messages.count }

    /// Whether the buffer has reached one of its limits.
    var isFull: Bool { messages.count >= maxMessages || bytes >= maxBytes }

    /// Messages and bytes that fit before reading must pause (at least 1 each: the
    /// message that reaches the limit is taken too).
    var room: (messages: Int, bytes: Int) {
        (max(1, maxMessages - messages.count), max(1, maxBytes - bytes))
    }
    /// Whether nothing is buffered.
    var isEmpty: Bool { messages.isEmpty }

    enum ReceiveAction {
        /// A consumer was waiting: resume it with the message.
        case deliver(Consumer)
        /// Buffered; nothing to do.
        case buffered
        /// Buffered and a limit was reached: stop reading the socket.
        case bufferedPauseReading
    }

    /// A message arrived from the peer.
    mutating func receive(_ message: WebSocketMessage) -> ReceiveAction {
        if let consumer = consumers.popFirst() { return .deliver(consumer) }
        messages.append(message)
        bytes += message.byteCount
        if bytes > peakBytes { peakBytes = bytes }
        if !isReadingPaused && (messages.count >= maxMessages || bytes >= maxBytes) {
            isReadingPaused = true
            return .bufferedPauseReading
        }
        return .buffered
    }

    enum NextAction {
        /// The next message; `resumeReading` says the socket should be read again.
        case message(WebSocketMessage, resumeReading: Bool)
        /// Nothing buffered: the consumer must wait.
        case wait
    }

    /// The consumer asks for the next message.
    mutating func next() -> NextAction {
        guard let message = messages.popFirst() else { return .wait }
        bytes -= message.byteCount
        var resume = false
        if isReadingPaused && messages.count <= maxMessages / 4 && bytes <= maxBytes / 4 {
            isReadingPaused = false
            resume = true
        }
        return .message(message, resumeReading: resume)
    }

    /// Moves up to `limit` more messages into the consumer's own `buffer` (after `next()`
    /// returned one), so it can take them without the lock; returns whether the socket
    /// should be read again. When everything buffered fits, the two buffers trade places
    /// (no copy per message): the queue starts empty and reading resumes while the
    /// consumer works through its batch.
    mutating func take(into buffer: inout Deque<WebSocketMessage>, limit: Int) -> Bool {
        guard !messages.isEmpty, limit > 0 else { return false }
        if buffer.isEmpty, messages.count <= limit {
            swap(&buffer, &messages)
            bytes = 0
        } else {
            var moved = 0
            var movedBytes = 0
            while moved < limit, let message = messages.first, movedBytes + message.byteCount <= maxBytes {
                messages.removeFirst()
                movedBytes += message.byteCount
                moved += 1
                buffer.append(message)
            }
            guard moved > 0 else { return false }
            bytes -= movedBytes
        }
        if isReadingPaused && messages.count <= maxMessages / 4 && bytes <= maxBytes / 4 {
            isReadingPaused = false
            return true
        }
        return false
    }

    /// How many messages a consumer may hold in its own buffer: up to the limits, so what
    /// is held in memory stays within twice them (the queue refills while the consumer
    /// works through its batch).
    var consumerBatchLimit: Int { maxMessages }

    /// Parks a consumer until a message arrives or the connection ends.
    mutating func park(_ consumer: Consumer) {
        consumers.append(consumer)
    }

    /// Whether a consumer waits for a message.
    var hasParkedConsumer: Bool { !consumers.isEmpty }

    /// Removes every parked consumer (the connection ended, or the consumer was cancelled).
    mutating func takeConsumers() -> Deque<Consumer> {
        defer { consumers = [] }
        return consumers
    }
}
