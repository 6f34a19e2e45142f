import FoundationEssentials

/// What went wrong with a WebSocket connection.
///
/// Every failure the SDK reports is one of these cases, so callers can match on
/// them; ``description`` gives a sentence a person can act on.
///
/// ```swift
/// do {
///     let connection = try await WebSocket.connect(to: "wss://example.org/feed")
///     // ...
/// } catch WebSocketError.handshakeRejected(let status, let headers, _) where status == 401 {
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
    /// `headers` holds every response header (e.g. `WWW-Authenticate`, `Retry-After`,
    /// `Location`) as the server spelled its name; `body` holds the response body, at
    /// most its first 64 KiB (an error page, a JSON reason).
    case handshakeRejected(status: Int, headers: [String: String], body: Data)
    /// The HTTP proxy refused to open a tunnel (`CONNECT` answered with a status other
    /// than 2xx, e.g. 407 when it wants credentials); `headers` holds its response headers
    /// (e.g. `Proxy-Authenticate`).
    case proxyRejected(status: Int, headers: [String: String])
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
        case .handshakeRejected(let status, let headers, _):
            if let challenge = headers.value(named: "WWW-Authenticate") {
                "handshake rejected: HTTP \(status) (WWW-Authenticate: \(challenge))"
            } else if let retryAfter = headers.value(named: "Retry-After") {
                "handshake rejected: HTTP \(status) (Retry-After: \(retryAfter))"
            } else {
                "handshake rejected: HTTP \(status)"
            }
        case .proxyRejected(let status, let headers):
            if status == 407 {
                "the proxy requires authentication: HTTP 407"
                    + (headers.value(named: "Proxy-Authenticate").map { " (Proxy-Authenticate: \($0))" } ?? "")
            } else {
                "the proxy refused to open a tunnel: HTTP \(status)"
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

extension [String: String] {
    /// The value of header `name`, whatever the case of its spelling.
    func value(named name: String) -> String? {
        if let value = self[name] { return value }
        let lowered = name.lowercased()
        return first { $0.key.lowercased() == lowered }?.value
    }
}
