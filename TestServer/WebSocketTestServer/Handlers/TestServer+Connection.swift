import CLibWebSockets
import FoundationEssentials
import WebSocketStreams

extension TestServer {
    /// The server's side of one connection on a handler's path: what the client asked for
    /// and sent, and what the handler sends back.
    ///
    /// ```swift
    /// TestServer.Handler { connection in
    ///     #expect(connection.headers["authorization"] == "Bearer t1")
    ///     for await message in connection.messages {
    ///         try await connection.send(message)            // an echo
    ///     }
    /// }
    /// ```
    ///
    /// Besides messages, a handler can misbehave on cue: ``delay(_:)``,
    /// ``send(_:inFramesOf:)`` (fragments of given sizes), ``ping(_:)``, ``stopReading()``
    /// (to exercise the client's backpressure), ``drop(midMessage:after:)`` and ``drop()``.
    public final class Connection: Sendable {
        /// The connection's id in the server's record (``Snapshot/connection(_:)``).
        public let id: Int
        /// The request path without the query, e.g. `/feed`.
        public let path: String
        /// The query parameters of the request, decoded.
        public let query: [String: String]
        /// The request headers the server could read, keyed by lowercased name (see
        /// ``Handler/headerNames``).
        public let headers: [String: String]
        /// The subprotocols the client offered, in its order.
        public let offeredSubprotocols: [String]
        /// The subprotocol the server selected, if any.
        public let subprotocol: String?
        /// What the client sent, in order. It finishes when the client closes or goes away
        /// (after every message that arrived before), or when the reading task is cancelled.
        /// Read it from one task; ``receive()`` reads the same messages. A second reader
        /// waiting at the same time gets the end (`nil`) at once.
        ///
        /// While the handler does not read, messages wait here; past 4 MiB unread, the
        /// server stops reading the socket until the handler catches up, so the client's
        /// own backpressure takes over.
        public let messages: AsyncStream<WebSocketMessage>

        let link: HandlerLink

        init(link: HandlerLink, request: UpgradeRequest, subprotocol: String?) {
            id = link.id
            path = request.path
            query = request.query
            headers = request.headers
            offeredSubprotocols = request.offeredSubprotocols
            self.subprotocol = subprotocol
            self.link = link
            messages = AsyncStream(unfolding: { await link.nextMessage() })
        }

        /// The client's close code, once its close frame arrived (1005, no status received,
        /// for a close frame without one); `nil` before that, or if it dropped the connection.
        public var closeCode: WebSocketCloseCode? { link.clientClose.code }
        /// The reason in the client's close frame, once it arrived.
        public var closeReason: String? { link.clientClose.reason }
        /// Whether the connection has ended (closed by either side, or dropped).
        public var hasEnded: Bool { link.hasEnded }

        /// The next message the client sent, or `nil` once the connection ended and every
        /// message was read. Shares the messages with ``messages``.
        public func receive() async -> WebSocketMessage? {
            await link.nextMessage()
        }

        /// Sends `message` as one frame.
        ///
        /// Returns once it is queued; waits first while 1 MiB of earlier messages is still
        /// queued, so a client that reads slowly slows the handler down instead of making the
        /// server's memory grow.
        ///
        /// - Throws: ``TestServerError/connectionEnded(_:)`` once the connection ended;
        ///   `CancellationError` if the task is cancelled while waiting.
        public func send(_ message: WebSocketMessage) async throws {
            try await send(message, inFramesOf: [])
        }

        /// Sends `message` fragmented: a frame for each size in `sizes` (the first carries the
        /// opcode, the others are continuations), then a final frame with the rest (possibly
        /// empty). An empty `sizes` sends one frame.
        ///
        /// - Throws: As ``send(_:)``.
        public func send(_ message: WebSocketMessage, inFramesOf sizes: [Int]) async throws {
            let frames = OutgoingFrames.fragments(of: message, sizes: sizes, final: true)
            try await queue(frames)
        }

        /// Sends a ping with `payload` (at most 125 bytes are sent). The client's pong is
        /// counted in the record (``ConnectionRecord/pongsReceived``).
        public func ping(_ payload: Data = Data()) async throws {
            try await queue([OutgoingFrames.Frame(payload: Array(payload.prefix(125)), flags: LWS_WRITE_PING.rawValue)])
        }

        /// Waits `duration`: a server that is slow to answer.
        public func delay(_ duration: Duration) async throws {
            try await Task.sleep(for: duration)
        }

        /// Stops reading the socket, as a server that is stuck would: the client's sends back
        /// up into its own buffers and then its backpressure. Pings go unanswered too.
        public func stopReading() async {
            link.onLoop { connection, wsi in connection.setReading(paused: true, for: .handlerAsked, wsi) }
        }

        /// Reads the socket again after ``stopReading()``.
        public func resumeReading() async {
            link.onLoop { connection, wsi in connection.setReading(paused: false, for: .handlerAsked, wsi) }
        }

        /// Closes with a close frame carrying `code` and `reason` (at most 123 bytes), once
        /// every message sent before has been written, and returns when the client answered
        /// (or the connection ended otherwise).
        public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
            guard !link.hasEnded else { return }
            link.onLoop { connection, wsi in connection.requestEnding(.close(code: code.rawValue, reason: reason), wsi) }
            await link.waitForEnd()
        }

        /// Drops the TCP connection without a close frame, once every message sent before has
        /// been written, as a server that crashes or loses its network would. The client sees
        /// 1006 (abnormal closure).
        public func drop() async {
            guard !link.hasEnded else { return }
            link.onLoop { connection, wsi in connection.requestEnding(.drop, wsi) }
            await link.waitForEnd()
        }

        /// Sends the first `byteCount` payload bytes of `message` as a frame without FIN, then
        /// drops the TCP connection: the client meets a message that never ends.
        public func drop(midMessage message: WebSocketMessage, after byteCount: Int) async {
            let frames = OutgoingFrames.fragments(of: message, sizes: [max(0, byteCount)], final: false)
            guard (try? await queue(frames)) != nil else { return }
            await drop()
        }

        private func queue(_ frames: [OutgoingFrames.Frame]) async throws {
            let total = frames.reduce(0) { $0 + $1.payload.count }
            try await link.reserve(total)
            let posted = link.onLoop { connection, wsi in
                for frame in frames { connection.enqueue(wsi, payload: frame.payload, flags: frame.flags) }
            }
            if !posted { throw TestServerError.connectionEnded(id) }
        }
    }
}
