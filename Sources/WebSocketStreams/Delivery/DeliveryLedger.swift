import DequeModule

/// The messages written to the socket whose bytes the peer's TCP may not have acknowledged
/// yet, each with the offset in the connection's outgoing byte stream at which it ends.
///
/// A message counts as delivered once the peer's TCP has acknowledged every byte up to that
/// offset (``RawSocket/acknowledgedByteCount(of:)``); over TLS the offset is the end of the
/// record that carried its last byte, since the peer cannot read the message before the
/// whole record arrives. When a connection ends, ``unacknowledged(acknowledged:)`` lists the
/// messages that never got there: they are reported unsent (and a reconnecting socket
/// sends them again), while a message whose bytes were acknowledged is never sent twice.
///
/// The offsets count every byte handed to the socket since it connected: a proxy's
/// request, the TLS handshake and the upgrade request included, exactly as the kernel's
/// acknowledgement count does. Recording a message costs an append; acknowledged entries
/// are forgotten in batches (one `getsockopt` per ``pruneThreshold`` entries at most), so
/// the ledger holds about what is in flight, whatever the message rate.
///
/// A pure value: the owner reads the acknowledgement count and passes it in.
struct DeliveryLedger {
    /// The fewest entries worth a look at the acknowledgement count.
    static let minimumPruneThreshold = 256

    private var entries = Deque<(end: Int, message: WebSocketMessage)>()
    /// The entry count at which ``needsPruning`` says it is time to forget acknowledged ones.
    private(set) var pruneThreshold = DeliveryLedger.minimumPruneThreshold

    /// Messages recorded and not forgotten yet.
    var count: Int { entries.count }

    /// Whether enough entries are held that the acknowledged ones should be forgotten.
    var needsPruning: Bool { entries.count >= pruneThreshold }

    /// Records that `message` was written whole, its last byte (or its record's) ending at
    /// `end` in the outgoing byte stream. Offsets only grow.
    mutating func record(_ message: WebSocketMessage, endingAt end: Int) {
        assert(entries.last.map { $0.end <= end } ?? true, "stream offsets only grow")
        entries.append((end, message))
    }

    /// Forgets the messages whose bytes the peer acknowledged (those ending at or before
    /// `acknowledged`), and moves the next pruning point past what is still in flight so
    /// a peer slow to acknowledge costs no more than one look per doubling.
    mutating func forget(acknowledged: Int) {
        while let first = entries.first, first.end <= acknowledged {
            entries.removeFirst()
        }
        pruneThreshold = max(Self.minimumPruneThreshold, 2 * entries.count)
    }

    /// Forgets every entry: the connection closed cleanly, or delivery cannot be told.
    mutating func removeAll() {
        entries.removeAll()
        pruneThreshold = Self.minimumPruneThreshold
    }

    /// The messages, oldest first, whose bytes were not all acknowledged when the peer's
    /// TCP had acknowledged `acknowledged` bytes of the stream.
    func unacknowledged(acknowledged: Int) -> [WebSocketMessage] {
        entries.filter { $0.end > acknowledged }.map(\.message)
    }
}
