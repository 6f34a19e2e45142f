import WebSocketStreams

/// Everything that can happen during a session, delivered to its one loop in order.
///
/// Tasks and threads (the connection, standard input, signals, timers, the sender) only
/// post events; the ``Session`` loop alone decides and prints, so its state needs no lock.
enum SessionEvent: Sendable {
    /// The connection opened (direct mode).
    case opened(WebSocket)
    /// A (re)connection opened (`--reconnect`).
    case reconnected(WebSocket)
    /// Connecting failed (direct mode).
    case connectFailed(WebSocketError)
    /// Connecting was cancelled (timeout or Ctrl-C while connecting).
    case connectCancelled
    /// `--header-command` failed before an attempt: wsdump ends with its status.
    case headerCommandFailed(HeaderCommand.Failure)
    /// A data message arrived.
    case received(WebSocketMessage)
    /// A piece of a data message arrived (`--stream`).
    case receivedPiece(ReceivedPiece)
    /// No more messages will arrive: the connection (or reconnecting socket) has ended.
    case receiveEnded
    /// The reconnecting socket's state changed.
    case state(ReconnectingWebSocket.State)
    /// A handshake head or a control frame went out or came in (`-vv`, `--jsonl`).
    case wire(WebSocketWireEvent)
    /// A line of piped input.
    case inputLine([UInt8])
    /// Bytes typed at the terminal (raw mode).
    case keys([UInt8])
    /// Standard input ended.
    case inputEnded
    /// `--eof-wait` has passed since input ended.
    case eofWaitElapsed
    /// `--timeout` has passed.
    case timeoutElapsed
    /// SIGINT, SIGTERM or SIGHUP.
    case interrupted
    /// A second has passed since the first interrupt and the session is still going.
    case interruptGraceElapsed
    /// Standard output's reader went away.
    case outputClosed
    /// A message is about to be handed to the connection (posted first, so it is shown
    /// before any reply to it).
    case sending(WebSocketMessage)
    /// A message could not be sent.
    case sendFailed(String)
    /// A `--send-file` upload of `size` bytes is starting.
    case sendingFile(path: String, size: Int)
    /// The `--file` upload has been handed to the connection (or failed).
    case uploadFinished
    /// A `/ping` finished.
    case pingFinished(Result<Duration, WebSocketError>, requestedPayload: String?)
    /// `-v` on `wss://`: the server's chain, as `sha256/` pins with their roles.
    case certificatePins(String)
}
