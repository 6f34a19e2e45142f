extension ReconnectingWebSocket {
    /// Where a ``ReconnectingWebSocket`` is in its life.
    ///
    /// `idle` → `connecting` → `connected` → (`reconnecting` → `connecting` → `connected`)* →
    /// one of the terminal states `completed`, `cancelled` or `failed`.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Created; nothing has been used yet.
        case idle
        /// Opening connection number `attempt` since the last stable connection (1-based).
        case connecting(attempt: Int)
        /// Open, with the subprotocol the server chose.
        case connected(subprotocol: String?)
        /// The last attempt or connection ended with `cause`; the next attempt starts `after` this delay.
        case reconnecting(after: Duration, cause: WebSocketError)
        /// Closed normally (``ReconnectingWebSocket/close()``, or a peer's 1000): no more retries.
        case completed
        /// Ended because the `messages` iteration ended or its task was cancelled.
        case cancelled
        /// Ended by an error that retrying cannot fix, or after ``ReconnectPolicy/maxAttempts``.
        case failed(WebSocketError)

        /// Whether the socket has ended for good.
        public var isTerminal: Bool {
            switch self {
            case .completed, .cancelled, .failed: true
            case .idle, .connecting, .connected, .reconnecting: false
            }
        }

        /// A delay for people, to the hundredth: "0.19 seconds".
        private static func seconds(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            let hundredths = seconds * 100 + attoseconds / 10_000_000_000_000_000
            let fraction = hundredths % 100
            return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction) seconds"
        }

        /// A short description, e.g. `reconnecting after 0.25 seconds (connection failed: ...)`.
        public var description: String {
            switch self {
            case .idle: "idle"
            case .connecting(let attempt): "connecting (attempt \(attempt))"
            case .connected(let subprotocol): subprotocol.map { "connected (\($0))" } ?? "connected"
            case .reconnecting(let delay, let cause): "reconnecting after \(Self.seconds(delay)) (\(cause))"
            case .completed: "completed"
            case .cancelled: "cancelled"
            case .failed(let error): "failed: \(error)"
            }
        }
    }
}
