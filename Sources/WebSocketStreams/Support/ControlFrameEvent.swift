/// A control frame a connection sent or received, reported to
/// ``WebSocketConfiguration/controlFrameObserver`` (for wsdump's `-vv`).
package enum ControlFrameEvent: Sendable, Hashable {
    /// A ping went out: one from ``WebSocket/ping()``, or a keep-alive.
    case pingSent(keepalive: Bool)
    /// The pong for the ping in flight arrived, after `roundTrip`.
    case pongReceived(roundTrip: Duration)
    /// The peer's close frame arrived.
    case closeReceived(code: WebSocketCloseCode, reason: String)
    /// This side's close frame went out.
    case closeSent(code: WebSocketCloseCode, reason: String)
}
