import TaskLifetimes
import WebSocketStreams

/// Where a ``Session`` is, each stage carrying what only it has.
///
/// The session's loop alone reads and changes it (one event at a time), so it needs no lock.
enum SessionStage {
    /// Waiting for the opening handshake.
    case connecting(Connecting)
    /// Connected: input is sent.
    case open(Connected)
    /// A close has been asked for with `code`; waiting for the connection to end.
    case closing(Connected, code: WebSocketCloseCode)

    /// What the session has while it connects.
    struct Connecting {
        /// Owns the task that connects (direct mode); cancelled by `--timeout` or Ctrl-C.
        let attempt = TaskBag()
        /// A close asked for while still connecting, done once the connection opens.
        var pendingClose: WebSocketCloseCode?
    }

    /// What the session has once a link is open: what it talks through, and how far input
    /// and closing have got.
    struct Connected {
        let link: any SessionLink
        /// The connection of a direct session; `nil` with `--reconnect`.
        let directConnection: WebSocket?
        let outgoing: OutgoingQueue
        /// When the (first) connection opened, for `--timings`.
        var openedAt: ContinuousClock.Instant?
        var input = Input.notStarted
        /// Whether anything was sent or queued: an input line, `-t`, `--file` or `--send-file`.
        var sentAnything: Bool
        /// The codes ``Session/closeNow(_:reason:)`` has closed with (each at most once).
        var closedNow: Set<WebSocketCloseCode> = []
        /// `--reconnect`: the socket's terminal state, once reached.
        var finalState: ReconnectingWebSocket.State?
    }

    /// How far standard input has been read.
    enum Input {
        /// Not read yet: waiting for the `--file` upload, or `--listen`.
        case notStarted
        /// Lines or keys are being read.
        case reading
        /// Input ended (end of file, Ctrl-D).
        case ended
    }

    /// The link, once one is open (also while closing).
    var connected: Connected? {
        switch self {
        case .connecting: nil
        case .open(let connected), .closing(let connected, _): connected
        }
    }

    /// Whether input is sent: connected and no close asked for.
    var isOpen: Bool {
        if case .open = self { return true }
        return false
    }

    /// Changes the link's data in whichever stage holds it; does nothing while connecting.
    mutating func updateConnected(_ change: (inout Connected) -> Void) {
        switch self {
        case .connecting:
            break
        case .open(var connected):
            change(&connected)
            self = .open(connected)
        case .closing(var connected, let code):
            change(&connected)
            self = .closing(connected, code: code)
        }
    }
}

/// How far the messages of the link have been read.
enum SessionReceiving {
    /// Messages may still arrive. The peer's close frame, once reported, is held until every
    /// message read before it has been shown.
    case receiving(heldClose: WebSocketWireEvent?)
    /// No more messages will arrive: the connection (or reconnecting socket) has ended.
    case ended
}
