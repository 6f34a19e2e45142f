/// One connection attempt of a ``ReconnectingWebSocket``, as its `prepare` hook sees it
/// before the attempt starts: where it goes and which headers it sends.
///
/// `prepare` runs before every attempt, the first included, and may change ``url`` and
/// ``headers`` (a fresh token, a newly signed URL); what it sets holds for that attempt
/// only, and the next one starts again from the socket's URL and configuration.
///
/// ```swift
/// let socket = ReconnectingWebSocket(
///     to: "wss://example.org/feed",
///     prepare: { attempt in
///         let token = try await tokens.current(refresh: attempt.previousError?.httpStatus == 401)
///         attempt.headers["Authorization"] = "Bearer \(token)"
///     })
/// ```
public struct WebSocketConnectAttempt: Sendable {
    /// Which attempt this is in the socket's life: 1 for the first connect, counting on
    /// across reconnects (it never resets).
    public let number: Int
    /// The URL this attempt connects to; starts as the URL the socket was given.
    public var url: String
    /// The request headers this attempt sends; starts as the configuration's
    /// ``WebSocketConfiguration/headers``.
    public var headers: [String: String]
    /// Why the last attempt failed or the last connection ended (e.g. a
    /// ``WebSocketError/Code/handshakeRejected`` 401 with its headers and body); `nil`
    /// before the first attempt.
    public let previousError: WebSocketError?

    /// Creates an attempt; ``ReconnectingWebSocket`` makes one before each connect.
    public init(number: Int, url: String, headers: [String: String], previousError: WebSocketError?) {
        self.number = number
        self.url = url
        self.headers = headers
        self.previousError = previousError
    }
}
