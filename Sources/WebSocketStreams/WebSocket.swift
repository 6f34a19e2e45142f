import DequeModule
import Synchronization
import SynchronizationSupport
import WebSocketCore

/// An open WebSocket client connection.
///
/// Make one with ``connect(to:configuration:eventLoop:)-(String,_,_)``, read with
/// ``messages``, write with ``send(_:)``:
///
/// ```swift
/// import WebSocketStreams
///
/// let connection = try await WebSocket.connect(to: "ws://127.0.0.1:9001/echo")
/// try await connection.send(.text("hello"))
/// for await message in connection.messages {
///     print(message)
///     break                                  // ending the loop closes with 1001
/// }
/// print(connection.closeCode ?? "still closing")
/// ```
///
/// The connection lives while you use it: ending a `for await` loop over ``messages``
/// (by `break`, `return`, or cancelling its task) closes it with 1001 (going away), and
/// so does releasing the last reference to it while nothing iterates ``messages``.
/// Close it yourself with ``close(code:reason:)`` to choose the code or to wait for the
/// closing handshake.
///
/// Every method is safe to call from any task at once.
public final class WebSocket: Sendable {
    let connection: ClientConnection

    init(connection: ClientConnection) {
        self.connection = connection
    }

    deinit {
        connection.handleReleased()
    }

    /// The messages the peer sends, in order, as one `AsyncStream`.
    ///
    /// Reading is flow-controlled: when you read slowly, at most
    /// ``WebSocketConfiguration/maxBufferedMessages`` messages (or
    /// ``WebSocketConfiguration/maxBufferedBytes`` bytes) are held, then the connection
    /// stops reading from the socket until you catch up, and TCP holds the peer back.
    ///
    /// The stream finishes after the connection closes and every buffered message has
    /// been delivered; ``closeCode``, ``closeReason`` and ``error`` then say how it ended.
    ///
    /// Iterate it once, in one task. Ending that iteration early, by leaving the loop or
    /// cancelling the task, closes the connection with 1001 (going away): the stream's
    /// termination is the connection's teardown. So does releasing an iterator made with
    /// `makeAsyncIterator()` after taking a message from it, e.g. a helper that makes one
    /// per call and returns: for one message at a time, call ``receive()`` instead, which
    /// ends nothing. Each access returns a new stream over the same messages; a stream
    /// that is never iterated has no effect.
    ///
    /// One reader at a time: an iteration that starts while another task iterates
    /// `messages` (or ``messageBatches``, ``messageStreams``, or waits in ``receive()``)
    /// would split the messages between them, so it ends at once instead, and the
    /// connection closes (1011) with ``error`` set to ``WebSocketError/Code/invalidUse``.
    /// Read in one task and hand the messages on (e.g. through an `AsyncStream`).
    ///
    /// On a connection with ``WebSocketConfiguration/streamsIncomingMessages`` on, read
    /// ``messageStreams``: `messages` ends at once there, and the connection closes with
    /// ``error`` set to ``WebSocketError/Code/invalidUse``, saying so.
    public var messages: AsyncStream<WebSocketMessage> {
        let iteration = MessageIteration(
            connection: connection,
            rejection: connection.configuration.streamsIncomingMessages ? .messagesOfStreamingConnection : nil)
        return AsyncStream(unfolding: { await iteration.next() })
    }

    /// Sends a message.
    ///
    /// Returns once the message is queued for writing, in order with every other message
    /// sent on this connection (whatever task sends it); a small message with nothing queued
    /// before it is written to the socket on the spot instead, encrypted on the spot over
    /// `wss://` (see the *Performance* article). While more than
    /// ``WebSocketConfiguration/maxBufferedSendBytes`` bytes wait to be written, it
    /// suspends until the backlog halves. Messages queued before ``close(code:reason:)``
    /// are written before the close frame.
    ///
    /// - Throws: ``WebSocketError/closed(code:reason:)`` (or the error that ended the
    ///   connection) once it is closing or closed; ``WebSocketError/connectionFailed(_:)``
    ///   when the socket failed as this message was written to it; `CancellationError` if
    ///   the task is cancelled while waiting for room (the message was then not queued).
    ///
    /// It runs on the caller's executor (`nonisolated(nonsending)`): queuing or writing a
    /// message never hops threads.
    nonisolated(nonsending)
    public func send(_ message: WebSocketMessage) async throws {
        try await connection.send(message)
    }

    /// Sends a message as ``send(_:)`` does, choosing whether permessage-deflate may compress it.
    ///
    /// With `compress: false` the message goes out uncompressed whatever
    /// ``WebSocketConfiguration/compression`` says: for a secret (a token, a session id)
    /// sent beside text an attacker can influence, which compression would leak (CRIME,
    /// BREACH), and for bytes already compressed (JPEG, gzip), where deflate only costs CPU.
    /// `compress: true` compresses it when compression was negotiated and the message
    /// reaches ``WebSocketCompression/threshold``.
    ///
    /// ```swift
    /// try await connection.send(.text(#"{"auth":"\#(token)"}"#), compress: false)
    /// try await connection.send(.binary(jpeg), compress: false)
    /// ```
    nonisolated(nonsending)
    public func send(_ message: WebSocketMessage, compress: Bool) async throws {
        try await connection.send(message, options: SendOptions(mayCompress: compress))
    }

    /// Sends a ping and returns the round-trip time to its pong.
    ///
    /// - Throws: ``WebSocketError/closed(code:reason:)`` when the connection ends first;
    ///   `CancellationError` when the task is cancelled.
    public func ping() async throws -> Duration {
        try await connection.ping()
    }

    /// Sends a ping carrying `payload` and returns the round-trip time to the pong that
    /// echoes it (RFC 6455 5.5.3: a pong carries its ping's payload).
    ///
    /// - Parameter payload: At most 125 bytes, e.g. `Array("hello".utf8)`.
    /// - Throws: ``WebSocketError/invalidConfiguration(_:)`` for a payload over 125 bytes;
    ///   otherwise as ``ping()``.
    public func ping(payload: [UInt8]) async throws -> Duration {
        try await connection.ping(payload: payload)
    }

    /// Closes the connection and waits until it is closed.
    ///
    /// Messages already queued by ``send(_:)`` are written first, then the close frame;
    /// the call returns when the peer has answered and the socket is closed, or after at
    /// most 10 seconds (then the socket is dropped). Calling it again, or on a closed
    /// connection, just waits for or returns that end.
    ///
    /// Every message the peer sent ahead of its answering close frame still reaches
    /// ``messages``. What it had not sent yet when this close arrived, it may drop: RFC 6455
    /// lets a server answer a close at once, and many (the TestServer's `/push` among them)
    /// stop pushing then. To get everything a server pushes, read until it closes (or until
    /// the messages you expect have arrived) before closing.
    ///
    /// - Parameters:
    ///   - code: A code that may be sent (``WebSocketCloseCode/isValidInCloseFrame``); others are
    ///     replaced by 1000.
    ///   - reason: Up to 123 bytes of UTF-8; longer text is cut.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        await connection.close(code: code, reason: reason)
    }

    /// The code the connection closed with, once it has: the peer's, the one this side
    /// sent, or ``WebSocketCloseCode/abnormalClosure`` when TCP ended without a close frame.
    /// `nil` while open or closing. A peer's code reaches you unchanged (1012, 1013 and
    /// 1014 included).
    public var closeCode: WebSocketCloseCode? {
        connection.read { $0.ending?.closeCode }
    }

    /// How the connection ended, as one value (who started the end, code, reason, error,
    /// unsent messages); `nil` while it is open. The same facts as ``closeCode``,
    /// ``closeReason``, ``error`` and ``unsentMessages``, plus who closed.
    public var ending: WebSocketEnding? {
        connection.read { $0.ending }
    }

    /// The reason text that came with ``closeCode`` (empty when none).
    public var closeReason: String {
        connection.read { $0.ending?.closeReason ?? "" }
    }

    /// The error that ended the connection, once it has ended (or, when this side ends it
    /// for an error, from the moment it starts closing): e.g.
    /// ``WebSocketError/messageTooLarge(limit:)`` or ``WebSocketError/pongTimeout``; for a
    /// connection lost without a close frame (1006), how it was lost, as
    /// ``WebSocketError/connectionFailed(_:)``: a reset, a TCP close, a TLS close_notify, or
    /// a TLS stream cut inside a record; ``WebSocketError/Code/undecodableMessage`` after
    /// ``WebSocketProtocol/messages(decoding:decoder:)`` closed it with 1007;
    /// ``WebSocketError/Code/invalidUse`` when it was read the wrong way. `nil` for a
    /// connection closed by a close handshake, or by ``close(code:reason:)`` (see ``closeCode``).
    public var error: WebSocketError? {
        connection.read { $0.error }
    }

    /// Messages accepted by ``send(_:)`` that the peer's TCP never acknowledged, oldest first:
    /// never written because the connection ended first, or written but not acknowledged
    /// when it ended (e.g. into a socket whose peer had already gone). A message the peer
    /// acknowledged is never listed. Empty while open, and after a clean close. Over a Unix
    /// domain socket, where there is no acknowledgement to read, only unwritten ones are listed.
    public var unsentMessages: [WebSocketMessage] {
        connection.read { $0.unsentMessages }
    }

    /// The subprotocol the server chose from ``WebSocketConfiguration/subprotocols``, if any.
    public var subprotocol: String? {
        connection.read { $0.subprotocol }
    }

    /// Whether this `wss://` connection resumed an earlier TLS session with the same server
    /// (an abbreviated handshake: no certificate exchange). Every connection offers the
    /// newest session of the last connection to the same host and port, so reconnects
    /// of a ``ReconnectingWebSocket`` resume. `false` for `ws://`.
    public var isTLSSessionResumed: Bool {
        connection.read { $0.tlsSessionResumed }
    }

    /// The `Sec-WebSocket-Extensions` the server accepted, e.g. `permessage-deflate`; `nil` when none.
    public var extensions: String? {
        connection.read { $0.negotiatedExtensions }
    }

    /// Every header of the server's `101 Switching Protocols` answer, by canonical name
    /// (e.g. `Server`, `Set-Cookie`, `Sec-WebSocket-Protocol`); repeated ones are joined
    /// with `", "`.
    public var responseHeaders: [String: String] {
        connection.read { $0.responseHeaders }
    }

    /// The total size of the data messages written to the socket so far, in payload bytes
    /// before compression. A message counts once its last frame has been written (handed
    /// to the kernel, through TLS for `wss://`), which can be well after its `send`
    /// returned; messages that are only queued do not count.
    ///
    /// Compare it with the sizes of the messages sent to see how far a backlog has got,
    /// e.g. for an upload's progress.
    public var writtenMessageBytes: Int {
        connection.bytesWritten.load(ordering: .relaxed)
    }

    /// Whether the connection is open (not yet closing or closed).
    public var isOpen: Bool {
        connection.read { $0.isOpen }
    }

    /// The most received bytes ever buffered for the consumer at once (for tests).
    var inboundPeakBytes: Int {
        connection.read { $0.inboundPeakBytes }
    }

    /// The URL this connection was made to (without user info): after redirects, the
    /// last one (see ``WebSocketConfiguration/maxRedirects``).
    public var url: String {
        connection.url.description
    }

    /// How long each phase of the opening handshake took: name resolution, TCP (and how
    /// many addresses were tried), a proxy tunnel, TLS, the upgrade, and the redirects.
    public var connectTimings: WebSocketConnectTimings {
        connection.read { $0.connectTimings }
    }
}
