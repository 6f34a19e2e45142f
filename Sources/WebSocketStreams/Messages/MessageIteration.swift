import DequeModule
import Synchronization

/// One iteration of ``WebSocket/messages`` or ``WebSocket/messageBatches``: its end (the
/// iterator released, or its task cancelled) ends the connection.
///
/// It is the connection's one reader from its first `next()` until it is released: an
/// iteration that starts while another reader takes messages (or one that may not read
/// this connection at all, `rejection`) ends at once, and ends the connection with
/// ``WebSocketError/Code/invalidUse``, rather than split the messages silently.
///
/// It keeps a small buffer of messages taken from the connection in one batch, so a fast
/// stream takes the connection's lock once per batch rather than once per message.
// @unchecked: `buffer`, `cancellationNoted`, `publishedHolding` and `refused` are only touched by
// `next()` or `nextBatch()` (and `deinit`), which AsyncStream calls from the one task iterating, one call
// at a time; `started` is atomic; `id` and `rejection` are constants.
final class MessageIteration: @unchecked Sendable {
    private let connection: ClientConnection
    private let started = Atomic<Bool>(false)
    /// Names this iteration as the connection's reader.
    private let id: UInt64
    /// Why this iteration may not read at all (`messages` on a connection that streams);
    /// `nil` when it may.
    private let rejection: WebSocketError?
    /// Whether it may not take messages (rejected, or another reader held the connection).
    private var refused = false
    private var buffer = Deque<WebSocketMessage>()
    private var cancellationNoted = false
    /// What ``WriteSide/consumerHoldsMessages`` was last set to.
    private var publishedHolding = false

    init(connection: ClientConnection, rejection: WebSocketError? = nil) {
        self.connection = connection
        self.rejection = rejection
        id = connection.waiterIDs.add(1, ordering: .relaxed).newValue
        connection.streamCreated()
    }

    /// The next message, from this iteration's buffer while it holds any.
    nonisolated(nonsending)
    func next() async -> WebSocketMessage? {
        if let message = buffer.popFirst() {
            if buffer.isEmpty { publishHolding(false) }
            return message
        }
        let message = await take()
        publishHolding(!buffer.isEmpty)
        return message
    }

    /// Every message buffered now, in order, at least one (waiting for it); `nil` at the end.
    nonisolated(nonsending)
    func nextBatch() async -> [WebSocketMessage]? {
        guard let first = await take() else {
            publishHolding(false)
            return nil
        }
        var batch: [WebSocketMessage] = []
        batch.reserveCapacity(buffer.count + 1)
        batch.append(first)
        batch.append(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
        // The consumer works through the batch now: a send meanwhile answers one of them.
        publishHolding(batch.count > 1)
        return batch
    }

    /// Waits for the next message from the connection, with what else is buffered in ``buffer``.
    nonisolated(nonsending)
    private func take() async -> WebSocketMessage? {
        if !started.load(ordering: .relaxed) {
            started.store(true, ordering: .releasing)
            if let rejection {
                refused = true
                connection.closeFailing(with: rejection, code: .internalServerError, reason: "messages read the wrong way")
            } else {
                refused = !connection.claimReading(by: id)
            }
        }
        if refused { return nil }
        if !cancellationNoted, Task.isCancelled {
            // Cancelled between calls: end the connection; what is buffered is still delivered.
            // (Checked once per batch: `AsyncStream` itself ends the iteration of a task
            // cancelled between calls, and its release ends the connection.)
            cancellationNoted = true
            connection.consumerCancelled()
        }
        return await connection.next(batchInto: &buffer)
    }

    /// Tells the connection's `send` whether received messages wait in this buffer.
    private func publishHolding(_ holding: Bool) {
        guard holding != publishedHolding else { return }
        publishedHolding = holding
        connection.writeSide.consumerHoldsMessages.store(holding, ordering: .relaxed)
    }

    deinit {
        if started.load(ordering: .acquiring), !refused { connection.releaseReading(by: id) }
        connection.streamReleased(wasIterated: started.load(ordering: .acquiring))
    }
}
