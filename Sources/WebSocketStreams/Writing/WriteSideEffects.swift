/// What a flush owes others once the write side (``WriteSide``) is
/// released: senders whose messages it admitted, wire events for the user's observer, and
/// the metrics of what it wrote. A flush collects them while it holds the lock and carries
/// them out after, so no continuation is resumed and no user code or metrics backend runs
/// while the lock is held (a sender resumed inside it could try to write directly and find
/// the lock taken; an observer could do anything).
///
/// Kept by the write side for the loop (``WriteSide/LoopSide``), used on the loop's thread only; its arrays keep
/// their capacity from flush to flush.
struct WriteSideEffects {
    private(set) var admitted: [OutboundQueue.Sender] = []
    private(set) var wireEvents: [WebSocketWireEvent] = []
    private(set) var sendQueueChange = 0
    private(set) var written = FrameWriter.WrittenTally()

    var isEmpty: Bool {
        admitted.isEmpty && wireEvents.isEmpty && sendQueueChange == 0 && written.bytes == 0
            && written.textMessages == 0 && written.binaryMessages == 0
    }

    mutating func resume(_ senders: [OutboundQueue.Sender]) { admitted.append(contentsOf: senders) }
    mutating func report(_ event: WebSocketWireEvent) { wireEvents.append(event) }
    mutating func sendQueueChanged(by bytes: Int) { sendQueueChange += bytes }

    mutating func wrote(_ tally: FrameWriter.WrittenTally) {
        written.textMessages += tally.textMessages
        written.binaryMessages += tally.binaryMessages
        written.bytes += tally.bytes
    }

    /// Carries everything out, in the order it was collected, and empties the list. Call
    /// without the write side's lock.
    mutating func run(observer: (@Sendable (WebSocketWireEvent) -> Void)?, metrics: ConnectionMetrics?) {
        for sender in admitted { sender.resume() }
        admitted.removeAll(keepingCapacity: true)
        if let observer { for event in wireEvents { observer(event) } }
        wireEvents.removeAll(keepingCapacity: true)
        if let metrics {
            if sendQueueChange != 0 { metrics.sendQueueChanged(by: sendQueueChange) }
            metrics.sent(written)
        }
        sendQueueChange = 0
        written = FrameWriter.WrittenTally()
    }
}
