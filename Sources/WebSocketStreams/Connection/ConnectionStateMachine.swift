import DequeModule
/// The state of one client connection, shared by the user's tasks and the service thread.
///
/// A pure value: every method takes an event, updates the state and returns what must
/// be done (continuations to resume, whether to wake the service thread). The storage
/// runs it under a lock and carries the action out after releasing the lock.
///
/// Phases: `connecting` → `open` → `closing` → `closed`; `connecting` may go straight to
/// `closed` (handshake failure), `open` may too (TCP loss).
struct ConnectionStateMachine {
    enum Phase: Equatable, Sendable {
        case connecting
        case open
        case closing
        case closed
    }

    /// Work the service thread must do on its next pass over the connection.
    struct ServiceRequests: OptionSet, Sendable {
        let rawValue: UInt8
        /// Something is queued to write (messages, pings or the close frame).
        static let write = ServiceRequests(rawValue: 1 << 0)
        /// The consumer caught up: read from the socket again.
        static let resumeReading = ServiceRequests(rawValue: 1 << 1)
        /// Drop the connection now (connect cancelled or timed out by the caller).
        static let abort = ServiceRequests(rawValue: 1 << 2)
        /// The consumer is done with the messages that arrived before a broken rule: fail
        /// the connection now (see ``deferFailureIfMessagesPending()``).
        static let applyDeferredFailure = ServiceRequests(rawValue: 1 << 3)
    }

    typealias ConnectWaiter = CheckedContinuation<Void, any Error>
    typealias PingWaiter = CheckedContinuation<Duration, any Error>
    typealias CloseWaiter = UnsafeContinuation<Void, Never>

    struct PendingPing {
        let id: UInt64
        /// The payload the user chose, or `nil` for the tag-and-id one.
        let payload: [UInt8]?
        let continuation: PingWaiter
        var writtenAt: ContinuousClock.Instant?
    }

    /// How the connection ended.
    struct Termination: Sendable {
        var code: WebSocketCloseCode
        var reason: String
        var error: WebSocketError?
        var initiator: WebSocketEnding.Initiator
    }

    /// Who started the end: the first of a close frame taken for writing (or a failure) on
    /// this side and the peer's close frame.
    private var closeInitiator: WebSocketEnding.Initiator?

    private(set) var phase: Phase = .connecting
    private var connectWaiter: ConnectWaiter?
    private var inbound: InboundQueue
    /// The most bytes the inbound queue ever held (``InboundQueue/peakBytes``).
    var inboundPeakBytes: Int { inbound.peakBytes }
    private var outbound: OutboundQueue
    private var pings: [PendingPing] = []
    /// The close frame to send once the outbound queue is written, and whether it went out.
    private var localClose: (code: WebSocketCloseCode, reason: String)?
    private var localCloseTaken = false
    private var peerClose: (code: WebSocketCloseCode, reason: String)?
    private var closeWaiters: [CloseWaiter] = []
    private var serviceScheduled = false
    private var requests: ServiceRequests = []
    /// Set when something ended the connection with an error before the transport closed.
    private var pendingError: WebSocketError?
    private(set) var termination: Termination?
    private(set) var unsentMessages: [WebSocketMessage] = []
    private(set) var subprotocol: String?
    private(set) var negotiatedExtensions: String?
    private(set) var responseHeaders: [String: String] = [:]
    /// Whether the TLS handshake resumed an earlier session.
    private(set) var tlsSessionResumed = false
    /// `messages` streams handed out and not yet released (iterated or not).
    private var liveStreams = 0
    private var isHandleReleased = false


    init(configuration: WebSocketConfiguration) {
        inbound = InboundQueue(
            maxMessages: configuration.maxBufferedMessages, maxBytes: configuration.maxBufferedBytes)
        outbound = OutboundQueue(highWatermark: configuration.maxBufferedSendBytes)
    }

    // MARK: - Scheduling

    /// Adds service requests; returns `true` when the caller must post the connection to
    /// the service thread (it was not already scheduled).
    private mutating func request(_ newRequests: ServiceRequests) -> Bool {
        requests.formUnion(newRequests)
        if serviceScheduled { return false }
        serviceScheduled = true
        return true
    }

    /// The service thread picks up the pending requests.
    mutating func takeRequests() -> ServiceRequests {
        serviceScheduled = false
        defer { requests = [] }
        return requests
    }

    // MARK: - Connecting

    enum ConnectAction {
        case wait
        case resume(ConnectWaiter, throwing: (any Error)?)
    }

    /// `connect` waits for the handshake.
    mutating func awaitConnect(_ waiter: ConnectWaiter) -> ConnectAction {
        if connectCancelled { return .resume(waiter, throwing: CancellationError()) }
        switch phase {
        case .connecting:
            connectWaiter = waiter
            return .wait
        case .open:
            return .resume(waiter, throwing: nil)
        case .closing, .closed:
            return .resume(waiter, throwing: pendingError ?? closedError)
        }
    }

    /// Whether the caller gave up on the handshake.
    private(set) var connectCancelled = false

    /// The caller gave up on the handshake: its waiter (to resume with `CancellationError`)
    /// and whether to wake the loop to drop the half-open connection.
    mutating func cancelConnect() -> (waiter: ConnectWaiter?, wake: Bool) {
        guard phase == .connecting else { return (nil, false) }
        connectCancelled = true
        defer { connectWaiter = nil }
        return (connectWaiter, request(.abort))
    }

    /// The handshake succeeded: the waiter to resume, or, when `connect` was cancelled
    /// meanwhile, nobody (the connection has no owner and goes away with 1001: `wake`).
    mutating func established(
        subprotocol: String?, extensions: String?, responseHeaders: [String: String] = [:],
        tlsSessionResumed: Bool = false
    ) -> (waiter: ConnectWaiter?, wake: Bool, error: WebSocketError?) {
        guard phase == .connecting else { return (nil, false, nil) }
        phase = .open
        self.tlsSessionResumed = tlsSessionResumed
        self.subprotocol = subprotocol
        negotiatedExtensions = extensions
        self.responseHeaders = responseHeaders
        if connectCancelled {
            return (nil, requestClose(code: .goingAway, reason: ""), nil)
        }
        if let abandon = localClose {
            // Closed while connecting (the loop is shutting down): close properly, and
            // `connect` fails instead of handing out a connection that is going away.
            localClose = nil
            let error = WebSocketError.connectionFailed("the connection was closed before it opened")
            pendingError = error
            let wake = requestClose(code: abandon.code, reason: abandon.reason)
            defer { connectWaiter = nil }
            return (connectWaiter, wake, error)
        }
        defer { connectWaiter = nil }
        return (connectWaiter, false, nil)
    }

    // MARK: - Sending

    enum SendAction {
        case accepted(wake: Bool)
        case mustWait
        case fail(WebSocketError)
    }

    mutating func send(_ message: WebSocketMessage) -> SendAction {
        guard phase == .open else { return .fail(closedError) }
        if outbound.isFull { return .mustWait }
        outbound.append(message)
        return .accepted(wake: request(.write))
    }

    /// Whether a `send` may write its message to the socket itself (``DirectWriter``):
    /// the connection is open and nothing accepted earlier waits to be written before it.
    /// Received messages waiting for the consumer say a pipeline is busy: the send is
    /// queued then, so the loop writes its answers in batches.
    var mayWriteDirectly: Bool {
        phase == .open && outbound.isEmpty && outbound.parkedCount == 0 && localClose == nil && inbound.isEmpty
    }

    /// A direct write left bytes (or an error) for the service thread; returns whether to wake it.
    mutating func requestWritePass() -> Bool {
        request(.write)
    }

    enum ParkAction {
        case parked
        case resume(OutboundQueue.Sender, wake: Bool)
        case fail(OutboundQueue.Sender, any Error)
    }

    mutating func park(
        sender id: UInt64, message: WebSocketMessage, continuation: OutboundQueue.Sender
    ) -> ParkAction {
        guard phase == .open else { return .fail(continuation, closedError) }
        switch outbound.park(id: id, message: message, continuation: continuation) {
        case .parked: return .parked
        case .cancelled: return .fail(continuation, CancellationError())
        case .accepted: return .resume(continuation, wake: request(.write))
        }
    }

    mutating func cancelSender(id: UInt64) -> OutboundQueue.Sender? {
        outbound.cancel(id: id)
    }

    mutating func senderFinished(id: UInt64) {
        outbound.forgetCancellation(id: id)
    }

    /// What the service thread writes on one writable pass.
    struct WriteBatch {
        var messages: [WebSocketMessage] = []
        var pings: [(id: UInt64, payload: [UInt8]?)] = []
        var close: (code: WebSocketCloseCode, reason: String)?
        var admitted: [OutboundQueue.Sender] = []

        /// Empties the batch, keeping its storage for the next one.
        mutating func removeAll() {
            messages.removeAll(keepingCapacity: true)
            pings.removeAll(keepingCapacity: true)
            admitted.removeAll(keepingCapacity: true)
            close = nil
        }
    }

    /// Takes what to write next: the next ping (only when `mayPing`: one ping is in flight
    /// at a time), then messages up to `budget` bytes, then the close frame once no message
    /// is left.
    mutating func takeWrites(
        budget: Int, into batch: inout WriteBatch, mayPing: Bool, now: @autoclosure () -> ContinuousClock.Instant
    ) {
        if mayPing, let index = pings.firstIndex(where: { $0.writtenAt == nil }) {
            pings[index].writtenAt = now()
            batch.pings.append((pings[index].id, pings[index].payload))
        }
        outbound.take(budget: budget, into: &batch.messages, admitted: &batch.admitted)
        if outbound.isEmpty, let localClose, !localCloseTaken {
            localCloseTaken = true
            if closeInitiator == nil { closeInitiator = .local }
            batch.close = localClose
        }
    }

    /// Bytes accepted and not yet handed to lws, and senders waiting for room.
    var sendBacklog: (bytes: Int, parkedSenders: Int) { (outbound.bytes, outbound.parkedCount) }

    /// The send queue's size when the metrics last saw it.
    private var reportedSendQueueBytes = 0

    /// How many bytes the send queue grew (negative: shrank) since the last call: the
    /// metrics follow it once per service pass, not once per `send`.
    mutating func takeSendQueueChange() -> Int {
        let change = outbound.bytes - reportedSendQueueBytes
        reportedSendQueueBytes = outbound.bytes
        return change
    }

    /// Whether writes are waiting (asked after a writable pass); pings count only when
    /// one may be sent now.
    func hasPendingWrites(mayPing: Bool) -> Bool {
        !outbound.isEmpty || (localClose != nil && !localCloseTaken) || (mayPing && pings.contains { $0.writtenAt == nil })
    }

    /// Whether a `ping()` waits to be written.
    var hasUnsentPing: Bool { pings.contains { $0.writtenAt == nil } }

    // MARK: - Receiving

    enum ReceiveAction {
        case deliver(InboundQueue.Consumer, WebSocketMessage)
        case none
        case pauseReading
    }

    /// A whole message arrived (service thread).
    mutating func receive(_ message: WebSocketMessage) -> ReceiveAction {
        // Closing with the buffer full: reading goes on (for the peer's close answer) but
        // what else arrives is dropped, as RFC 6455 allows once a close frame has been
        // sent or received, so a peer that keeps sending cannot grow the buffer.
        if phase != .open, inbound.isFull { return .none }
        switch inbound.receive(message) {
        case .deliver(let consumer):
            consumerHolding = true
            return .deliver(consumer, message)
        case .buffered: return .none
        // Closing: the peer's close answer must get in even if the consumer fell behind
        // (or left); the close timeout bounds what can pile up before it.
        case .bufferedPauseReading: return phase == .open ? .pauseReading : .none
        }
    }

    /// Received messages waiting for the consumer.
    var bufferedMessageCount: Int { inbound.count }

    /// Bytes of messages accepted by `send` that the loop has not taken for writing yet.
    var queuedSendBytes: Int { outbound.bytes }

    /// How many messages (and bytes) the consumer's buffer takes before reading pauses.
    var inboundRoom: (messages: Int, bytes: Int) { phase == .open ? inbound.room : (.max, .max) }

    /// Several whole messages arrived (service thread): waiting consumers take the first
    /// ones (added to `deliveries`), the rest are buffered; one lock for all of them.
    /// Returns whether reading must pause.
    mutating func receive(
        contentsOf batch: [WebSocketMessage], deliveries: inout [(InboundQueue.Consumer, WebSocketMessage)]
    ) -> Bool {
        var pause = false
        for message in batch {
            switch receive(message) {
            case .deliver(let consumer, let message): deliveries.append((consumer, message))
            case .pauseReading: pause = true
            case .none: break
            }
        }
        return pause
    }

    /// The consumer was handed messages and has not come back for more yet.
    private var consumerHolding = false
    /// A broken rule waits for the consumer to finish the messages before it.
    private var failureDeferred = false

    /// A frame broke a rule right behind messages the consumer has not finished with
    /// (buffered, or handed over and still being handled): whether to hold the failure
    /// until the consumer comes back for more. RFC 6455 lets an endpoint fail at once,
    /// but then a reply to those messages (an echo, an acknowledgement) never goes out;
    /// held, the failure lands exactly where the consumer reaches it.
    mutating func deferFailureIfMessagesPending() -> Bool {
        guard inbound.count > 0 || consumerHolding else { return false }
        failureDeferred = true
        return true
    }

    enum NextAction {
        case message(WebSocketMessage, wake: Bool)
        case finished
        case wait
    }

    /// The consumer wants the next message.
    mutating func next() -> NextAction {
        switch inbound.next() {
        case .message(let message, let resumeReading):
            consumerHolding = true
            let wake = resumeReading && phase != .closed ? request(.resumeReading) : false
            return .message(message, wake: wake)
        case .wait:
            consumerHolding = false
            return phase == .closed ? .finished : .wait
        }
    }

    /// Like ``next()``, and also moves a batch of the messages buffered behind it into the
    /// consumer's own buffer, so the consumer takes the lock once per batch.
    /// `batching: false` takes just the one message.
    mutating func next(batchInto buffer: inout Deque<WebSocketMessage>, batching: Bool = true) -> NextAction {
        switch inbound.next() {
        case .message(let message, let resumeReading):
            let limit = batching ? inbound.consumerBatchLimit - 1 : 0
            let resumeAfterBatch = limit > 0 ? inbound.take(into: &buffer, limit: limit) : false
            let resume = resumeReading || resumeAfterBatch
            consumerHolding = true
            let wake = resume && phase != .closed ? request(.resumeReading) : false
            return .message(message, wake: wake)
        case .wait:
            consumerHolding = false
            return phase == .closed ? .finished : .wait
        }
    }

    enum ParkConsumerAction {
        case resume(InboundQueue.Consumer, with: WebSocketMessage?, wake: Bool)
        case parked(wake: Bool)
    }

    /// Parks the consumer; resumes it at once when a message or the end arrived meanwhile.
    /// A consumer that parks has finished every message before a held failure: that
    /// failure is applied now (`wake`).
    mutating func park(consumer: InboundQueue.Consumer) -> ParkConsumerAction {
        switch next() {
        case .message(let message, let wake): return .resume(consumer, with: message, wake: wake)
        case .finished: return .resume(consumer, with: nil, wake: false)
        case .wait:
            if consumersCancelled { return .resume(consumer, with: nil, wake: false) }
            inbound.park(consumer)
            guard failureDeferred else { return .parked(wake: false) }
            failureDeferred = false
            return .parked(wake: request(.applyDeferredFailure))
        }
    }

    // MARK: - Consumer lifetime

    /// A `messages` stream was handed out.
    mutating func streamCreated() {
        liveStreams += 1
    }

    /// A `messages` stream was released. If it had been iterated, its iteration ended
    /// (break, return, cancellation) and the connection goes away with 1001; if not, the
    /// connection goes away only when nothing can use it any more (the handle is gone too).
    /// Returns whether to wake the loop.
    mutating func streamReleased(wasIterated: Bool) -> Bool {
        liveStreams = max(0, liveStreams - 1)
        if (wasIterated && !isScoped) || (isHandleReleased && liveStreams == 0) {
            return requestClose(code: .goingAway, reason: "")
        }
        return false
    }

    /// The task iterating `messages` was cancelled: parked consumers end now, later ones
    /// get only what is already buffered, and the connection goes away with 1001.
    mutating func consumerCancelled() -> (consumers: [InboundQueue.Consumer], wake: Bool) {
        consumersCancelled = true
        return (inbound.takeConsumers().elementsAsArray, requestClose(code: .goingAway, reason: ""))
    }

    private var consumersCancelled = false

    /// The connection belongs to a scope (``WebSocket/withConnection(to:configuration:eventLoop:isolation:_:)``)
    /// that closes it when it ends: an iteration of `messages` ending early (`first(where:)`,
    /// `break`) does not close it with 1001 then.
    var isScoped = false

    /// The user's `WebSocket` handle was released. A `messages` stream may still be in use
    /// (Swift may release the handle right after its last use, `connection.messages`); once
    /// no stream is left either, nobody can use the connection and it goes away with 1001.
    mutating func handleReleased() -> Bool {
        isHandleReleased = true
        guard liveStreams == 0 else { return false }
        return requestClose(code: .goingAway, reason: "")
    }

    // MARK: - Closing

    enum CloseAction {
        case wait(wake: Bool, failedSenders: [OutboundQueue.Sender])
        case done
    }

    /// `close(code:reason:)`: queue the close frame behind the messages already accepted;
    /// senders still waiting for room fail.
    mutating func close(code: WebSocketCloseCode, reason: String, waiter: CloseWaiter) -> CloseAction {
        if phase == .closed { return .done }
        let wake = requestClose(code: code, reason: reason)
        closeWaiters.append(waiter)
        return .wait(wake: wake, failedSenders: outbound.takeParkedSenders())
    }

    /// Waits for the end without asking for it; `false` when the connection has already ended.
    mutating func awaitTermination(_ waiter: CloseWaiter) -> Bool {
        if phase == .closed { return false }
        closeWaiters.append(waiter)
        return true
    }

    /// Queues a close frame without a waiter (shutdown); returns whether to wake and the
    /// senders that will never get room.
    mutating func closeWithoutWaiting(code: WebSocketCloseCode, reason: String) -> (wake: Bool, failedSenders: [OutboundQueue.Sender]) {
        (requestClose(code: code, reason: reason), outbound.takeParkedSenders())
    }

    /// Moves an open connection to `closing` with a close frame to send. Returns whether to wake.
    private mutating func requestClose(code: WebSocketCloseCode, reason: String) -> Bool {
        switch phase {
        case .connecting:
            // Remembered: if the handshake completes anyway, `established` closes with it.
            if localClose == nil { localClose = (code, reason) }
            return request(.abort)
        case .open:
            phase = .closing
            localClose = (code, reason)
            // Read again even if the consumer fell behind: the peer's close answer must get in.
            return request([.write, .resumeReading])
        case .closing, .closed:
            return false
        }
    }

    /// Senders parked for room will never get it once the connection is closing.
    mutating func takeParkedSendersIfClosing() -> [OutboundQueue.Sender] {
        phase == .open ? [] : outbound.takeParkedSenders()
    }

    /// Whether a close frame has been queued or sent by this side.
    var isClosingLocally: Bool { localClose != nil }

    /// The peer sent a close frame (lws answers it).
    mutating func peerClosed(code: WebSocketCloseCode, reason: String) {
        peerClose = (code, reason)
        if closeInitiator == nil { closeInitiator = .peer }
        if phase == .open { phase = .closing }
    }

    /// The service thread ends the connection because of `error` (too large, pong timeout,
    /// invalid data); `closeCode` is what we send, or nil when the socket is just dropped.
    mutating func failed(with error: WebSocketError, closeCode: WebSocketCloseCode?, reason: String = "") {
        if pendingError == nil { pendingError = error }
        if closeInitiator == nil { closeInitiator = .local }
        if let closeCode, phase == .open || phase == .closing, !localCloseTaken {
            localClose = (closeCode, reason)
            localCloseTaken = true
        }
        if phase == .open { phase = .closing }
    }

    // MARK: - Pings

    enum PingAction {
        case wait(wake: Bool)
        case fail(PingWaiter, any Error)
    }

    /// `ping()` waits for the pong of ping `id`.
    mutating func ping(id: UInt64, payload: [UInt8]? = nil, waiter: PingWaiter) -> PingAction {
        if cancelledPings.remove(id) != nil { return .fail(waiter, CancellationError()) }
        guard phase == .open else { return .fail(waiter, closedError) }
        pings.append(PendingPing(id: id, payload: payload, continuation: waiter))
        return .wait(wake: request(.write))
    }

    private var cancelledPings = Set<UInt64>()

    /// The task waiting for ping `id` was cancelled: its waiter, if it was registered.
    mutating func cancelPing(id: UInt64) -> PingWaiter? {
        if let index = pings.firstIndex(where: { $0.id == id }) {
            return pings.remove(at: index).continuation
        }
        cancelledPings.insert(id)
        return nil
    }

    /// Forgets a cancellation mark of a ping that finished.
    mutating func pingFinished(id: UInt64) {
        cancelledPings.remove(id)
    }

    /// The pong for ping `id` arrived: its waiter and the round-trip time.
    mutating func pong(id: UInt64, at now: ContinuousClock.Instant) -> (PingWaiter, Duration)? {
        guard let index = pings.firstIndex(where: { $0.id == id }), let writtenAt = pings[index].writtenAt else {
            return nil
        }
        let ping = pings.remove(at: index)
        return (ping.continuation, now - writtenAt)
    }

    // MARK: - The end

    /// Everything to resume or fail when the transport is gone.
    struct Finale {
        var connectWaiter: ConnectWaiter?
        var connectError: WebSocketError?
        var consumers: [InboundQueue.Consumer] = []
        var parkedSenders: [OutboundQueue.Sender] = []
        var pings: [PingWaiter] = []
        var closeWaiters: [CloseWaiter] = []
        var error: WebSocketError = .closed(code: .abnormalClosure, reason: "")
    }

    /// The handshake failed; ends the connection with `error`.
    mutating func connectFailed(_ error: WebSocketError) -> Finale? {
        guard phase == .connecting else { return nil }
        pendingError = error
        return transportClosed()
    }

    /// The socket is gone (closed, dropped, or destroyed). Returns `nil` when already closed.
    ///
    /// - Parameter unwritten: Messages the service thread had taken from the queue but not
    ///   finished writing; they never reached the peer whole and count as unsent, ahead of
    ///   those still queued.
    /// `abnormalEnd` says why the socket went when no close frame was exchanged (a reset, a
    /// truncated TLS stream, TCP closed): it becomes the termination's error then.
    /// `closeFrameAcknowledged` is `false` when this side's close frame was written but the
    /// peer's TCP never acknowledged it: without the peer's close, the close did not happen.
    mutating func transportClosed(
        unwritten: [WebSocketMessage] = [], abnormalEnd: WebSocketError? = nil, closeFrameAcknowledged: Bool = true
    ) -> Finale? {
        if phase == .closed { return nil }
        let wasConnecting = phase == .connecting
        phase = .closed
        var finale = Finale()
        let code: WebSocketCloseCode
        let reason: String
        if let peerClose {
            (code, reason) = peerClose
        } else if let localClose, localCloseTaken, closeFrameAcknowledged {
            (code, reason) = localClose
        } else {
            (code, reason) = (.abnormalClosure, "")
            // Lost, unless this side had asked to close (its close frame never got out, or
            // never reached the peer's TCP; the socket was dropped after the close timeout,
            // a loop shutdown, or a peer that had gone): a 1006 without an error then.
            if pendingError == nil, localClose == nil { pendingError = abnormalEnd }
        }
        let initiator = closeInitiator ?? (localClose != nil ? .local : .connectionLost)
        termination = Termination(code: code, reason: reason, error: pendingError, initiator: initiator)
        finale.error = pendingError ?? .closed(code: code, reason: reason)
        if wasConnecting {
            finale.connectWaiter = connectWaiter
            finale.connectError = pendingError ?? .connectionFailed("the connection closed during the opening handshake")
            connectWaiter = nil
        }
        finale.consumers = inbound.takeConsumers().elementsAsArray
        let drained = outbound.drain()
        unsentMessages = unwritten + drained.unsent
        finale.parkedSenders = drained.parked
        finale.pings = pings.map(\.continuation)
        pings = []
        finale.closeWaiters = closeWaiters
        closeWaiters = []
        return finale
    }

    /// The error for operations that need an open connection.
    var closedError: WebSocketError {
        if let termination { return termination.error ?? .closed(code: termination.code, reason: termination.reason) }
        if let pendingError { return pendingError }
        if let peerClose { return .closed(code: peerClose.code, reason: peerClose.reason) }
        if let localClose { return .closed(code: localClose.code, reason: localClose.reason) }
        return .closed(code: .abnormalClosure, reason: "")
    }
}
