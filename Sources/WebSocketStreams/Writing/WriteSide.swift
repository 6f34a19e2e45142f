import LibWebSocketsLoop
import Synchronization
import SynchronizationSupport

/// The one writer of a connection's outgoing byte stream, and the lock that makes it one.
///
/// Two kinds of thread write to a socket: the loop, which encodes what the state machine
/// hands it (queued messages, pings, pongs, the close frame) into frames, and a task whose
/// `send` finds the socket idle and writes its small message itself (``DirectWriter``).
/// Whoever holds this lock is the only writer: the loop holds it for a whole flush, a task
/// for its one frame. Everything about the stream lives behind it, in ``State``: the
/// loop's frame writer, the bytes the socket has not taken yet (the loop's and the tasks'
/// in one queue, in order), whether tasks may write now, the stream's byte count and the
/// ledger of what the peer's TCP has not acknowledged.
///
/// Nothing is resumed or called out to while the lock is held: a flush hands back what it
/// owes senders, the wire-event observer and the metrics (``WriteSideEffects``), and the
/// caller carries it out after. Lock order: this lock, then the state machine's; never
/// the other way round.
final class WriteSide: Sendable {
    let state = AnnotatedMutex(State(), rank: .writeSide)
    /// What only the loop touches, without the lock.
    let loopSide: LoopBound<LoopSide>
    /// When the latest `send` returned (``DirectWriter/monotonicNanoseconds()``).
    let lastSendReturned = Atomic<Int>(0)
    /// How long a sender must have been away before its `send` may write directly, in
    /// nanoseconds (``DirectWriter/burstGap``; tests set 0 to make every send eligible).
    let directWriteGap = Atomic<Int>(DirectWriter.burstGap)
    /// Whether the stream's consumer holds received messages it has not handled yet (set by
    /// the `messages` iterator): a send then answers one of a batch, and is queued with the rest.
    let consumerHoldsMessages = Atomic<Bool>(false)
    /// When the latest `send` started (``DirectWriter/monotonicNanoseconds()``).
    let lastSendStarted = Atomic<Int>(0)
    /// What the consumer took since the latest `send` (``ConsumerTook``), cleared by each `send`.
    let consumerTook = Atomic<Int>(0)

    /// The bits of ``consumerTook``.
    enum ConsumerTook {
        /// The consumer was handed a message.
        static let message = 1
        /// It had to wait for it (nothing was buffered): what it answers came after a quiet spell.
        static let afterWaiting = 2
    }
    /// Sends that could have been written directly but found the loop writing (tests, diagnostics).
    let directWritesMissed = Atomic<Int>(0)

    init(loop: EventLoopThread) {
        loopSide = LoopBound(LoopSide(), on: loop)
    }

    /// The loop's own notes and reused storage.
    struct LoopSide {
        /// Whether tasks may have been let write (see ``withTLSSession(_:stopsDirectWrites:)``).
        var directWritesOpened = false
        /// What the current flush owes senders, the observer and the metrics.
        var effects = WriteSideEffects()
        /// Storage for the next batch taken from the state machine.
        var batch = ConnectionStateMachine.WriteBatch()
        /// Bytes the socket has taken from the loop so far (wrapping): the loop's spin check reads it.
        var bytesSent = 0
    }

    /// Everything about the outgoing stream, behind the lock.
    struct State {
        /// The loop's frames: queued messages, control frames and the close frame.
        var frames = FrameWriter()
        /// Bytes handed to the stream that the socket has not taken yet, in order, whoever
        /// wrote them; sent before anything else.
        var pending = PendingOutput()
        /// The tasks' frames, and whether they may write now.
        var direct = DirectWriter()
        /// Why a task's write failed, for the loop to end the connection with.
        var failure: String?
        /// Bytes handed to the socket's outgoing stream so far (sent or in ``pending``),
        /// the TLS and proxy handshakes included: the offsets the ledger compares with the
        /// peer's acknowledgements.
        var streamBytes = 0
        /// The messages written that the peer may not have acknowledged yet; kept only
        /// while ``tracksDelivery`` (TCP, not Unix sockets).
        var ledger = DeliveryLedger()
        /// Whether the socket tells how much of the stream the peer acknowledged (TCP).
        var tracksDelivery = false
        /// Where this side's close frame ends in the outgoing stream, once encoded.
        var closeFrameStreamEnd: Int?
    }

    /// Whether a `send` that started at `started` may try to write its message itself. A
    /// send right after the previous one returned is part of a burst, and one that answers
    /// a batch of received messages is part of a pipeline: both are queued, so the loop
    /// writes them with one system call instead of one each.
    ///
    /// A send that answers a received message (``consumerTook``) is neither when its task had
    /// to wait for that message, or when it starts ``DirectWriter/burstGap`` after the previous
    /// send *started*: on a virtual machine the `send(2)` that wakes the peer can take most of
    /// a round trip, so the time between a send's return and the next request says nothing
    /// there. (Measured on W1 with the return-to-start gap alone: 16-20% of the round trips'
    /// sends were queued on the default executor, each costing a wake-up of the loop, 44% on
    /// the loop executor, and 97% on the loop executor in latency mode.)
    func mayTryDirectWrite(startedAt started: Int) -> Bool {
        let previousStart = lastSendStarted.exchange(started, ordering: .relaxed)
        let took = consumerTook.load(ordering: .relaxed) == 0 ? 0 : consumerTook.exchange(0, ordering: .relaxed)
        guard !consumerHoldsMessages.load(ordering: .relaxed) else { return false }
        let gap = directWriteGap.load(ordering: .relaxed)
        if took & ConsumerTook.afterWaiting != 0 { return true }
        if took & ConsumerTook.message != 0, started - previousStart >= gap { return true }
        return started - lastSendReturned.load(ordering: .relaxed) >= gap
    }

    /// The consumer was handed a message; `waited`: it had to wait for it.
    func noteConsumerTook(waited: Bool) {
        let bits = waited ? ConsumerTook.message | ConsumerTook.afterWaiting : ConsumerTook.message
        if consumerTook.load(ordering: .relaxed) & bits != bits { consumerTook.bitwiseOr(bits, ordering: .relaxed) }
    }

    /// Bytes the socket has taken from the loop so far (wrapping; loop only): the loop's
    /// spin check compares it before and after each callback.
    var bytesSent: Int { loopSide.value.bytesSent }

    /// Runs `body` with the state, holding the lock (tests and diagnostics read counts here).
    func withLock<Result>(_ body: (inout sending State) -> sending Result) -> sending Result {
        state.withLock(body)
    }

    /// Like ``withLock(_:)``, but `nil` at once when someone else holds the lock.
    func withLockIfAvailable<Result>(_ body: (inout sending State) -> sending Result) -> sending Result? {
        state.withLockIfAvailable(body)
    }

    /// Runs `body`, which calls into the TLS session, holding the lock while tasks may
    /// write directly: they use the session too, and a session is used by one thread at a
    /// time. When `stopsDirectWrites` says so of the result (a failed session), tasks may
    /// not write directly from then on, decided before the lock is let go. Loop only.
    func withTLSSession<Result>(_ body: () -> Result, stopsDirectWrites: (Result) -> Bool = { _ in false }) -> Result {
        guard loopSide.value.directWritesOpened else { return body() }
        return state.withLock { state in
            let result = body()
            if stopsDirectWrites(result) {
                state.closeDirectWrites()
                loopSide.value.directWritesOpened = false
            }
            return result
        }
    }

    /// Stops direct writes for good (the socket is closing): waits out one in progress, so
    /// no task writes to a descriptor lws is about to close. Loop only.
    func closeDirectWrites() {
        guard loopSide.value.directWritesOpened else { return }
        loopSide.value.directWritesOpened = false
        state.withLock { $0.closeDirectWrites() }
    }

}

extension WriteSide.State {
    /// Tasks may not write from now on.
    mutating func closeDirectWrites() {
        direct.descriptor = -1
        direct.tls = nil
    }
}
