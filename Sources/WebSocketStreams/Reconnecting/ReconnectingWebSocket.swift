import DequeModule
import FoundationEssentials
import Synchronization
import SynchronizationSupport

/// A WebSocket whose `messages` stream survives dropped connections.
///
/// ```swift
/// let socket = ReconnectingWebSocket(
///     to: "wss://example.org/feed",
///     onConnect: { connection in try await connection.send(.text("subscribe")) })
/// for await message in socket.messages {     // spans reconnects
///     handle(message)
/// }
/// ```
///
/// The socket connects on first use (iterating ``messages`` or ``states``, or ``send(_:)``).
/// When a connection drops it reconnects with exponential backoff and jitter
/// (``ReconnectPolicy``), runs `onConnect` again (to re-subscribe, re-authenticate), then
/// sends what was queued meanwhile. Errors retrying cannot fix (a 401, a bad certificate)
/// end it at once with ``State/failed(_:)``.
///
/// **Delivery.** ``send(_:)`` returns once its message has been handed to an open
/// connection (immediately when one is open and nothing is queued ahead). While
/// disconnected it waits in a bounded queue, and queued messages go out in order after
/// `onConnect` has finished. A message is delivered once the server's TCP acknowledged
/// every byte of it. If a connection drops, the messages it had accepted that were not
/// acknowledged (never written, or written but never acknowledged, as into a socket whose
/// peer had already gone) are sent on the next connection, once, ahead of anything queued
/// later; an acknowledged message is never sent twice. Bytes the server's kernel
/// acknowledged but its application never read are beyond what TCP can tell (see the
/// reconnecting-streams article). Messages still unsent when
/// the socket ends are failed (their senders throw) or, if their senders had already
/// returned, listed in ``unsentMessages``.
///
/// **Ending.** ``close()`` closes with 1000 and ends the socket (``State/completed``). Ending
/// the `for await` loop over ``messages`` (or cancelling its task) closes with 1001 and ends
/// it (``State/cancelled``); a cancelled iteration returns only after the close handshake, so
/// a `TaskScope` that switches sessions never overlaps two connections.
public final class ReconnectingWebSocket: Sendable {
    let storage: ReconnectingStorage

    /// Creates a socket; nothing connects until it is first used.
    ///
    /// - Parameters:
    ///   - url: A `ws://` or `wss://` URL.
    ///   - configuration: Used for every connection.
    ///   - policy: When to retry and how long to wait; see ``ReconnectPolicy``.
    ///   - eventLoop: The loop that services the connections.
    ///   - clock: The clock that backoff delays and connection uptime are measured on. A
    ///     test can pass a clock it advances by hand, so reconnects need no real waiting.
    ///   - onConnect: Runs after every (re)connect, before queued messages are sent. Send
    ///     with the connection it is given (e.g. subscriptions); do not iterate its
    ///     `messages` (ending that iteration would close it). If it throws, that connection
    ///     is closed (1001) and the socket reconnects.
    public init(
        to url: String,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil
    ) {
        storage = ReconnectingStorage(
            url: url, configuration: configuration, policy: policy, eventLoop: eventLoop, clock: clock, onConnect: onConnect)
    }

    /// Creates a socket whose every attempt is first handed to `prepare`, which may set the
    /// attempt's URL and headers: fresh credentials for each connect.
    ///
    /// ```swift
    /// let socket = ReconnectingWebSocket(
    ///     to: "wss://example.org/feed",
    ///     prepare: { attempt in attempt.headers["Authorization"] = "Bearer \(try await tokens.fresh())" })
    /// ```
    ///
    /// - Parameters:
    ///   - url: A `ws://` or `wss://` URL; each attempt starts from it.
    ///   - configuration: Used for every connection; each attempt starts from its headers.
    ///   - policy: When to retry and how long to wait; see ``ReconnectPolicy``.
    ///   - eventLoop: The loop that services the connections.
    ///   - clock: The clock that backoff delays and connection uptime are measured on.
    ///   - prepare: Runs before every attempt, the first included, with a
    ///     ``WebSocketConnectAttempt`` to change: what it sets holds for that attempt only.
    ///     When an upgrade is refused with 401 or 403, it runs again at once (its
    ///     ``WebSocketConnectAttempt/previousError`` says why) and the attempt is retried
    ///     once without the backoff delay; a second 401 or 403 in a row is decided by the
    ///     policy. If it throws, the socket ends with ``State/failed(_:)`` and a
    ///     ``WebSocketError/Code/prepareFailed`` error carrying its description. `nil`
    ///     (the default): every attempt uses `url` and `configuration` as they are.
    ///   - onConnect: Runs after every (re)connect, before queued messages are sent; see
    ///     ``init(to:configuration:policy:eventLoop:clock:onConnect:)-(String,_,_,_,_,_)``.
    public init(
        to url: String,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        prepare: (@Sendable (inout WebSocketConnectAttempt) async throws -> Void)? = nil,
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil
    ) {
        storage = ReconnectingStorage(
            url: url, configuration: configuration, policy: policy, eventLoop: eventLoop, clock: clock, prepare: prepare,
            onConnect: onConnect)
    }

    /// Creates a socket for `url` that hands every attempt to `prepare` first; see
    /// ``init(to:configuration:policy:eventLoop:clock:prepare:onConnect:)-(String,_,_,_,_,_,_)``.
    public convenience init(
        to url: URL,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        prepare: (@Sendable (inout WebSocketConnectAttempt) async throws -> Void)? = nil,
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil
    ) {
        self.init(
            to: url.absoluteString, configuration: configuration, policy: policy, eventLoop: eventLoop, clock: clock,
            prepare: prepare, onConnect: onConnect)
    }

    /// Creates a socket for `url`; see ``init(to:configuration:policy:eventLoop:clock:onConnect:)-(String,_,_,_,_,_)``.
    public convenience init(
        to url: URL,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil
    ) {
        self.init(
            to: url.absoluteString, configuration: configuration, policy: policy, eventLoop: eventLoop, clock: clock,
            onConnect: onConnect)
    }

    deinit {
        storage.handleReleased()
    }

    /// Every message the server sends, across reconnects, in order. Messages a connection
    /// had received before it dropped are delivered before those of the next connection.
    ///
    /// Iterate it once, in one task. Ending that iteration (`break`, `return`, cancelling the
    /// task) closes the socket with 1001 for good.
    public var messages: AsyncStream<WebSocketMessage> {
        let iteration = ReconnectingIteration(storage: storage)
        return AsyncStream(unfolding: { await iteration.next() }, onCancel: { iteration.cancelled() })
    }

    /// The socket's states as they change, starting with the current one; the stream
    /// finishes after a terminal state. Each access gives an independent stream.
    public var states: AsyncStream<State> {
        // Subscribed before starting: on a socket nothing has started yet, the first state
        // is always `idle`, then `connecting (attempt 1)`; later subscribers start with the
        // current state.
        let stream = storage.makeStateStream()
        storage.startIfNeeded()
        return stream
    }

    /// The current state (the last one ``states`` delivered).
    public var state: State {
        storage.shared.withLock { $0.watchers.publishedState }
    }

    /// Sends a message now, or when the next connection is ready; see the type's delivery notes.
    ///
    /// - Throws: ``WebSocketError/sendQueueFull(messages:bytes:)`` when the queue is full (the
    ///   message was not queued); the socket's end error (``WebSocketError/closed(code:reason:)``
    ///   or the fatal error) when it ends first; `CancellationError` if the task is cancelled
    ///   while the message is still queued (it is then removed).
    public func send(_ message: WebSocketMessage) async throws {
        try await storage.send(message)
    }

    /// Sends a message as ``send(_:)`` does; with `compress: false` it goes out uncompressed
    /// whatever ``WebSocketConfiguration/compression`` says (see ``WebSocket/send(_:compress:)``).
    /// A message resent after a drop is sent uncompressed, whichever way it was sent first.
    public func send(_ message: WebSocketMessage, compress: Bool) async throws {
        try await storage.send(message, options: SendOptions(mayCompress: compress))
    }

    /// Queues a message and returns at once, without waiting for a connection: messages
    /// queued this way go out in the order of the calls, together with those of ``send(_:)``.
    /// One task can queue a whole backlog while the socket is disconnected.
    ///
    /// A message that no connection writes before the socket ends is listed in
    /// ``unsentMessages``.
    ///
    /// - Throws: ``WebSocketError/sendQueueFull(messages:bytes:)`` when the queue is full, or
    ///   the socket's end error once it has ended.
    public func enqueue(_ message: WebSocketMessage) throws {
        try storage.enqueueWithoutWaiting(message)
    }

    /// Closes the open connection with `code` and `reason` (1000 by default), stops
    /// reconnecting, fails queued sends, and returns once everything has ended. Both
    /// streams finish.
    ///
    /// - Parameters:
    ///   - code: A code that may be sent (``WebSocketCloseCode/isValidInCloseFrame``); others are
    ///     replaced by 1000.
    ///   - reason: Up to 123 bytes of UTF-8; longer text is cut.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        storage.requestEnd(.completed, code: code.isValidInCloseFrame ? code : .normalClosure, reason: reason)
        await storage.waitUntilFinished()
    }

    /// The subprotocol the server chose for the open connection; `nil` while disconnected
    /// or when it chose none.
    public var subprotocol: String? {
        storage.shared.withLock { $0.current?.subprotocol }
    }

    /// Pings the peer over the open connection and returns the round trip to its pong.
    ///
    /// - Throws: ``WebSocketError/connectionFailed(_:)`` when no connection is open (the
    ///   socket is connecting, reconnecting or has ended); a connection that drops while
    ///   the ping waits throws its end error.
    public func ping() async throws -> Duration {
        guard let current = storage.shared.withLock({ $0.current }) else {
            throw WebSocketError.connectionFailed("not connected: the socket is \(state)")
        }
        return try await current.ping()
    }

    /// Pings the peer with `payload` (at most 125 bytes) over the open connection and
    /// returns the round trip to the pong that echoes it; throws as ``ping()`` does, and
    /// ``WebSocketError/invalidConfiguration(_:)`` for a payload over 125 bytes.
    public func ping(payload: [UInt8]) async throws -> Duration {
        guard let current = storage.shared.withLock({ $0.current }) else {
            throw WebSocketError.connectionFailed("not connected: the socket is \(state)")
        }
        return try await current.ping(payload: payload)
    }

    /// Messages that no connection wrote before the socket ended, although their `send` had
    /// returned (its connection dropped first) or they were queued with ``enqueue(_:)``.
    public var unsentMessages: [WebSocketMessage] {
        storage.shared.withLock { $0.ending.unsent }
    }
}

/// One iteration of ``ReconnectingWebSocket/messages``: its end ends the socket.
final class ReconnectingIteration: Sendable {
    private let storage: ReconnectingStorage
    private let started = Atomic<Bool>(false)

    init(storage: ReconnectingStorage) {
        self.storage = storage
        storage.streamCreated()
    }

    func next() async -> WebSocketMessage? {
        if !started.load(ordering: .relaxed) { started.store(true, ordering: .releasing) }
        return await storage.nextMessage()
    }

    /// Every message buffered on the current connection, in order, at least one; `nil` at the end.
    func nextBatch() async -> [WebSocketMessage]? {
        if !started.load(ordering: .relaxed) { started.store(true, ordering: .releasing) }
        var rest = Deque<WebSocketMessage>()
        guard let first = await storage.nextMessage(batchInto: &rest, batching: true) else { return nil }
        var batch = [first]
        batch.append(contentsOf: rest)
        return batch
    }

    func cancelled() {
        storage.consumerCancelled()
    }

    deinit {
        storage.streamReleased(wasIterated: started.load(ordering: .acquiring))
    }
}
