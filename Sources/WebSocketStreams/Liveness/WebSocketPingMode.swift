/// When keep-alive pings go out (``WebSocketConfiguration/pingMode``).
public enum WebSocketPingMode: Sendable, Hashable {
    /// A ping after ``WebSocketConfiguration/pingInterval`` without anything received: a
    /// busy connection sends none (its traffic proves the peer alive). The default.
    case idle
    /// A ping every ``WebSocketConfiguration/pingInterval`` whatever the traffic, for servers
    /// that expect them on a schedule (as picows' `PING_PERIODICALLY`, .NET's `KeepAliveInterval`).
    case periodic
}
