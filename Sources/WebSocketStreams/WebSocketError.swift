/// What went wrong with a WebSocket connection.
///
/// Every failure the SDK reports is one of these cases, so callers can match on
/// them; ``description`` gives a sentence a person can act on.
///
/// ```swift
/// do {
///     let connection = try await WebSocket.connect(to: "wss://example.org/feed")
///     // ...
/// } catch WebSocketError.handshakeRejected(let status, let headers) where status == 401 {
///     print("login needed:", headers["WWW-Authenticate"] ?? "")
/// } catch let error as WebSocketError {
///     print(error)   // e.g. "TLS failure: certificate has expired"
/// }
/// ```
public enum WebSocketError: Error, Sendable, Hashable {
    /// The URL cannot be used: bad syntax, a scheme other than `ws`/`wss`, no host, or a bad port.
    case invalidURL(String)
    /// No connection could be made: the host did not resolve, the port refused, the network
    /// failed, or the connection ended during the handshake.
    case connectionFailed(String)
    /// The opening handshake did not finish within ``WebSocketConfiguration/connectTimeout``.
    case timedOut
    /// TLS failed, with OpenSSL's reason (e.g. an untrusted, expired or wrong-host certificate).
    case tlsFailure(String)
    /// The server answered the upgrade request with an HTTP status other than 101.
    ///
    /// `headers` holds the response headers libwebsockets exposes (among them
    /// `WWW-Authenticate`, `Retry-After`, `Content-Type`, `Location`), keyed by their
    /// canonical names. libwebsockets 4.1 does not expose the response body.
    case handshakeRejected(status: Int, headers: [String: String])
    /// The connection is closed (or closing) with this code and reason; thrown by
    /// operations that need an open connection.
    case closed(code: WebSocketCloseCode, reason: String)
    /// A received message exceeded ``WebSocketConfiguration/maxMessageSize``; the
    /// connection was closed with 1009.
    case messageTooLarge(limit: Int)
    /// The peer did not answer a keep-alive ping within ``WebSocketConfiguration/pongTimeout``.
    case pongTimeout
    /// The configuration cannot be used (e.g. an unreadable certificate file, a header
    /// with a line break, a close code that may not be sent).
    case invalidConfiguration(String)
    /// A ``ReconnectingWebSocket``'s send queue is full (``ReconnectPolicy/maxQueuedMessages``
    /// messages or ``ReconnectPolicy/maxQueuedBytes`` bytes wait for a connection); the
    /// message was not queued.
    case sendQueueFull(messages: Int, bytes: Int)
}

extension WebSocketError: CustomStringConvertible {
    /// A one-line explanation, e.g. `handshake rejected: HTTP 401`.
    public var description: String {
        switch self {
        case .invalidURL(let reason): "invalid URL: \(reason)"
        case .connectionFailed(let reason): "connection failed: \(reason)"
        case .timedOut: "timed out waiting for the opening handshake"
        case .tlsFailure(let reason): "TLS failure: \(reason)"
        case .handshakeRejected(let status, let headers):
            if let challenge = headers["WWW-Authenticate"] {
                "handshake rejected: HTTP \(status) (WWW-Authenticate: \(challenge))"
            } else if let retryAfter = headers["Retry-After"] {
                "handshake rejected: HTTP \(status) (Retry-After: \(retryAfter))"
            } else {
                "handshake rejected: HTTP \(status)"
            }
        case .closed(let code, let reason):
            reason.isEmpty ? "connection closed: \(code)" : "connection closed: \(code) \(reason.debugDescription)"
        case .messageTooLarge(let limit): "message larger than the \(limit)-byte limit; closed with 1009"
        case .pongTimeout: "the peer did not answer a keep-alive ping in time"
        case .invalidConfiguration(let reason): "invalid configuration: \(reason)"
        case .sendQueueFull(let messages, let bytes):
            "send queue full (\(messages) messages, \(bytes) bytes waiting for a connection); the message was not queued"
        }
    }
}
