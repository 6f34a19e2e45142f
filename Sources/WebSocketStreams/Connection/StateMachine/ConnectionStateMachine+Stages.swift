import WebSocketCore

extension ConnectionStateMachine {
    /// What the connection has while its opening handshake runs.
    struct Connecting {
        /// The `connect` call waiting for the handshake.
        var waiter: ConnectWaiter?
        /// The caller gave up on the handshake (its task was cancelled).
        var cancelled = false
        /// A close asked for while connecting (the loop shutting down, the handle released):
        /// if the handshake completes anyway, the connection closes with it at once.
        var closeRequested: CloseReason?
        /// When the handshake times out (``WebSocketConfiguration/connectTimeout``).
        let deadline: ContinuousClock.Instant
        /// When an abandoned upgrade stops waiting for the server's answer.
        var abandonDeadline: ContinuousClock.Instant?

        /// Whether nobody wants the connection any more.
        var isAbandoned: Bool { cancelled || closeRequested != nil }
    }

    /// A close code and reason, as sent or received.
    struct CloseReason: Equatable {
        var code: WebSocketCloseCode
        var reason: String
    }

    /// This side's close frame and how far it got.
    struct LocalClose {
        enum Progress {
            /// Waiting behind the messages accepted before it.
            case queued
            /// Handed to the frame writer, which writes it after the frame in progress.
            case taken
            /// Whole on the wire (handed to the socket).
            case written
        }

        var frame: CloseFrame
        var progress: Progress
        /// Sent because this side failed the connection (a broken rule): it does not
        /// wait for the peer's answer, only for the peer to end TCP.
        var failsConnection = false

        var code: WebSocketCloseCode { frame.code ?? .noStatusReceived }
        var reason: String { frame.reason }
    }

    /// The close handshake, from the first close frame asked for, sent or received (or
    /// the failure that ends the connection) until the socket is gone.
    struct Closing {
        /// Who started the end: the first of a close frame taken for writing (or a failure)
        /// on this side and the peer's close frame; `nil` while neither has happened.
        var initiator: WebSocketEnding.Initiator?
        /// This side's close frame, once asked for.
        var local: LocalClose?
        /// The peer's close frame, once received.
        var peer: CloseReason?
        /// Why this side is ending the connection (a broken rule, a pong timeout), if it is.
        var failure: WebSocketError?
        /// When to drop the socket if the close has not finished by then.
        var deadline: ContinuousClock.Instant?
        /// How long lingering may go on while the peer keeps sending (the rest of a long
        /// message it was writing when the close came).
        var lingerLimit: ContinuousClock.Instant?

        /// Whether this side's close frame is on the wire.
        var closeWritten: Bool { local?.progress == .written }
        /// Whether the close frames are done: ours is out, and the peer's came in (or ours
        /// failed the connection and needs no answer). Only the peer ending TCP is left.
        var isHandshakeDone: Bool { closeWritten && (peer != nil || local?.failsConnection == true) }
    }

    /// `ping()` calls waiting to be written or for their pong, one in flight at a time.
    struct PendingPings {
        struct Ping {
            let id: UInt64
            /// The payload the user chose, or `nil` for the tag-and-id one.
            let payload: [UInt8]?
            let waiter: PingWaiter
            var writtenAt: ContinuousClock.Instant?
        }

        var waiting: [Ping] = []
        /// Pings whose task was cancelled before they were registered.
        var cancelled = Set<UInt64>()
    }

    /// Who can still use the connection: its `messages` streams and its handle.
    struct ConsumerLifetime {
        /// `messages` streams handed out and not yet released (iterated or not).
        var liveStreams = 0
        var isHandleReleased = false
        /// The task iterating `messages` was cancelled.
        var isCancelled = false
        /// The consumer was handed messages and has not come back for more yet.
        var isHoldingMessages = false
        /// The connection belongs to a scope that closes it when it ends
        /// (``WebSocket/withConnection(to:configuration:eventLoop:isolation:_:)``).
        var isScoped = false
        /// The one reader taking messages now: an iteration of `messages` (from its first
        /// `next()` until it is released) or a `receive()` call (while it runs); `nil` when none.
        var reader: UInt64?
        /// The task in `receive()` was cancelled: it stops waiting, the connection stays open.
        var isReceiveCancelled = false
    }
}
