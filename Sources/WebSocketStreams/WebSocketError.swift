import FoundationEssentials
import WebSocketCore

/// What went wrong with a WebSocket connection.
///
/// Every failure the SDK reports is a `WebSocketError`: its ``code`` says what kind of
/// failure it is, and the optional properties carry the context that kind has (the HTTP
/// status of a refused handshake, the close code of a closed connection, a reason a person
/// can read). ``description`` gives a sentence a person can act on.
///
/// ```swift
/// do {
///     let connection = try await WebSocket.connect(to: "wss://example.org/feed")
///     // ...
/// } catch let error as WebSocketError where error.code == .handshakeRejected && error.httpStatus == 401 {
///     print("login needed:", error.headers?["WWW-Authenticate"] ?? "")
/// } catch let error as WebSocketError {
///     print(error)   // e.g. "TLS failure: certificate has expired"
/// }
/// ```
///
/// A struct rather than an enum so that a new kind of failure is a new ``Code``, not a
/// breaking change: match on ``code`` and keep a default branch.
public struct WebSocketError: Error, Sendable, Hashable {
    /// The kind of failure.
    public let code: Code
    /// What happened, in words (e.g. OpenSSL's reason for a TLS failure, or "connection
    /// refused"); `nil` when the code says it all.
    public let reason: String?
    /// The HTTP status of a refused handshake or proxy tunnel.
    public let httpStatus: Int?
    /// The response headers of a refused handshake or proxy tunnel, as the server spelled
    /// their names (look one up with any spelling through ``header(named:)``).
    public let headers: [String: String]?
    /// The body of a refused handshake (an error page, a JSON reason): at most its first 64 KiB.
    public let body: Data?
    /// The close code of a closed connection, or the one this side sent when it failed the
    /// connection (a protocol violation, a message too large).
    public let closeCode: WebSocketCloseCode?
    /// The reason text that came with ``closeCode`` (empty when none).
    public let closeReason: String?

    /// Creates an error; the SDK's own errors come from the static factories (e.g.
    /// ``connectionFailed(_:)``), which fill in the context their code has.
    public init(
        code: Code, reason: String? = nil, httpStatus: Int? = nil, headers: [String: String]? = nil,
        body: Data? = nil, closeCode: WebSocketCloseCode? = nil, closeReason: String? = nil
    ) {
        self.code = code
        self.reason = reason
        self.httpStatus = httpStatus
        self.headers = headers
        self.body = body
        self.closeCode = closeCode
        self.closeReason = closeReason
    }

    /// The value of response header `name`, whatever the case of its spelling.
    public func header(named name: String) -> String? {
        headers?.value(named: name)
    }
}

// MARK: - The failures the SDK reports

extension WebSocketError {
    /// The URL cannot be used: bad syntax, a scheme other than `ws`/`wss`, no host, or a bad port.
    public static func invalidURL(_ reason: String) -> WebSocketError {
        WebSocketError(code: .invalidURL, reason: reason)
    }

    /// No connection could be made (the host did not resolve, the port refused, the network
    /// failed, the connection ended during the handshake), or an open connection was lost
    /// without a close frame (a reset, TCP closed, a TLS stream cut short).
    public static func connectionFailed(_ reason: String) -> WebSocketError {
        WebSocketError(code: .connectionFailed, reason: reason)
    }

    /// The opening handshake did not finish within ``WebSocketConfiguration/connectTimeout``.
    public static var timedOut: WebSocketError { WebSocketError(code: .timedOut) }

    /// TLS failed, with OpenSSL's reason (e.g. an untrusted, expired or wrong-host certificate).
    public static func tlsFailure(_ reason: String) -> WebSocketError {
        WebSocketError(code: .tlsFailure, reason: reason)
    }

    /// The server answered the upgrade request with an HTTP status other than 101, with
    /// every response header (e.g. `WWW-Authenticate`, `Retry-After`, `Location`) and the
    /// response body (at most its first 64 KiB).
    public static func handshakeRejected(status: Int, headers: [String: String], body: Data) -> WebSocketError {
        WebSocketError(code: .handshakeRejected, httpStatus: status, headers: headers, body: body)
    }

    /// The HTTP proxy refused to open a tunnel (`CONNECT` answered with a status other
    /// than 2xx, e.g. 407 when it wants credentials), with its response headers (e.g.
    /// `Proxy-Authenticate`).
    public static func proxyRejected(status: Int, headers: [String: String]) -> WebSocketError {
        WebSocketError(code: .proxyRejected, httpStatus: status, headers: headers)
    }

    /// A SOCKS5 proxy refused: no acceptable authentication method, wrong credentials, or
    /// it could not connect to the server (`reason` gives its reply in words).
    public static func proxyRejected(_ reason: String) -> WebSocketError {
        WebSocketError(code: .proxyRejected, reason: reason)
    }

    /// The connection is closed (or closing) with this code and reason; thrown by
    /// operations that need an open connection.
    public static func closed(code: WebSocketCloseCode, reason: String) -> WebSocketError {
        WebSocketError(code: .closed, closeCode: code, closeReason: reason)
    }

    /// The peer broke RFC 6455 (or RFC 7692), so this side failed the connection with
    /// `closeCode` (1002, or 1007 for text that is not UTF-8); `reason` says which rule.
    public static func protocolViolation(closeCode: WebSocketCloseCode, reason: String) -> WebSocketError {
        WebSocketError(code: .protocolViolation, reason: reason, closeCode: closeCode, closeReason: reason)
    }

    /// A received message exceeded ``WebSocketConfiguration/maxMessageSize`` (`limit`
    /// bytes); the connection was closed with 1009.
    public static func messageTooLarge(limit: Int) -> WebSocketError {
        WebSocketError(
            code: .messageTooLarge, reason: "message larger than the \(limit)-byte limit",
            closeCode: .messageTooBig, closeReason: "")
    }

    /// A received message did not decode as `type`; `detail` says why.
    public static func undecodableMessage(_ message: WebSocketMessage, as type: Any.Type, detail: String) -> WebSocketError {
        WebSocketError(
            code: .undecodableMessage, reason: "\(message) did not decode as \(type): \(detail)",
            closeCode: .invalidFramePayloadData, closeReason: nil)
    }

    /// The peer did not answer a keep-alive ping within ``WebSocketConfiguration/pongTimeout``.
    public static var pongTimeout: WebSocketError { WebSocketError(code: .pongTimeout) }

    /// The configuration cannot be used (e.g. an unreadable certificate file, a header
    /// with a line break, a ping payload over 125 bytes).
    public static func invalidConfiguration(_ reason: String) -> WebSocketError {
        WebSocketError(code: .invalidConfiguration, reason: reason)
    }

    /// A message given to send cannot be sent as it is; `reason` says why.
    public static func invalidMessage(_ reason: String) -> WebSocketError {
        WebSocketError(code: .invalidMessage, reason: reason)
    }

    /// A ``ReconnectingWebSocket``'s `prepare` hook threw `reason` (the description of its
    /// error) before an attempt; the socket ended with this error.
    public static func prepareFailed(_ reason: String) -> WebSocketError {
        WebSocketError(code: .prepareFailed, reason: reason)
    }

    /// The connection was read in a way it does not allow; `reason` says what to do instead
    /// (see ``Code/invalidUse``).
    public static func invalidUse(_ reason: String) -> WebSocketError {
        WebSocketError(code: .invalidUse, reason: reason)
    }

    /// `messages` (or `messageBatches`) was read on a connection that streams its messages.
    static var messagesOfStreamingConnection: WebSocketError {
        .invalidUse(
            "this connection streams its messages (streamsIncomingMessages is on): read them through "
                + "messageStreams, or turn streamsIncomingMessages off to read messages or messageBatches")
    }

    /// A second reader came while another one took messages.
    static var secondReader: WebSocketError {
        .invalidUse(
            "two readers at once: only one task may read a connection's messages (one iteration of "
                + "messages, messageBatches or messageStreams, or one receive() call at a time); "
                + "read in one task and hand messages to others, e.g. through an AsyncStream")
    }

    /// A ``ReconnectingWebSocket``'s send queue is full (``ReconnectPolicy/maxQueuedMessages``
    /// messages or ``ReconnectPolicy/maxQueuedBytes`` bytes wait for a connection); the
    /// message was not queued.
    public static func sendQueueFull(messages: Int, bytes: Int) -> WebSocketError {
        WebSocketError(code: .sendQueueFull, reason: "\(messages) messages, \(bytes) bytes waiting for a connection")
    }
}

// MARK: - Description

extension WebSocketError: CustomStringConvertible {
    /// A one-line explanation, e.g. `handshake rejected: HTTP 401`.
    public var description: String {
        switch code {
        case .invalidURL:
            // Say what a URL looks like, unless the reason already does.
            "invalid URL: \(reason ?? "?")"
                + ((reason ?? "").contains("ws://") ? "" : " (a WebSocket URL looks like ws://host[:port]/path)")
        case .connectionFailed: "connection failed: \(reason ?? "?")"
        case .timedOut: reason.map { "timed out \($0)" } ?? "timed out waiting for the opening handshake"
        case .tlsFailure: "TLS failure: \(reason ?? "?")"
        case .handshakeRejected:
            if let challenge = header(named: "WWW-Authenticate") {
                "handshake rejected: HTTP \(httpStatus ?? 0) (WWW-Authenticate: \(challenge))"
            } else if let retryAfter = header(named: "Retry-After") {
                "handshake rejected: HTTP \(httpStatus ?? 0) (Retry-After: \(retryAfter))"
            } else if let reason {
                "\(reason) (HTTP \(httpStatus ?? 0), expected 101)"
            } else {
                "handshake rejected: HTTP \(httpStatus ?? 0)"
            }
        case .proxyRejected:
            if httpStatus == nil, let reason {
                reason
            } else if httpStatus == 407 {
                "the proxy requires authentication: HTTP 407"
                    + (header(named: "Proxy-Authenticate").map { " (Proxy-Authenticate: \($0))" } ?? "")
            } else {
                "the proxy refused to open a tunnel: HTTP \(httpStatus ?? 0)"
            }
        case .closed:
            Self.closedDescription("connection closed", closeCode, closeReason)
        case .protocolViolation:
            Self.closedDescription("protocol violation by the peer; closed", closeCode, closeReason)
        case .messageTooLarge:
            "\(reason ?? "message too large"); closed with 1009"
                + ((reason ?? "").contains("maxFragmentsPerMessage") ? "" : Self.messageTooLargeAdvice)
        // A heartbeat's timeout says so in its reason; a keep-alive ping's has none.
        case .pongTimeout: reason ?? "the peer did not answer a keep-alive ping in time"
        case .invalidConfiguration: "invalid configuration: \(reason ?? "?")"
        case .sendQueueFull: "send queue full (\(reason ?? "")); the message was not queued"
        case .undecodableMessage: "\(reason ?? "a message did not decode"); closed with 1007"
        case .invalidMessage: "invalid message: \(reason ?? "?")"
        case .prepareFailed: "the prepare hook failed before connecting: \(reason ?? "?")"
        case .invalidUse: "invalid use: \(reason ?? "?")"
        default: reason.map { "\(code): \($0)" } ?? "\(code)"
        }
    }

    /// What to do about a message over the size limit.
    private static let messageTooLargeAdvice =
        " (raise WebSocketConfiguration.maxMessageSize, or turn on streamsIncomingMessages and read"
        + " large messages in pieces through messageStreams, within maxStreamedMessageSize)"

    private static func closedDescription(_ prefix: String, _ code: WebSocketCloseCode?, _ reason: String?) -> String {
        let code = code.map { "\($0)" } ?? "?"
        guard let reason, !reason.isEmpty else { return "\(prefix): \(code)" }
        return "\(prefix): \(code) \(reason.debugDescription)"
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

extension WebSocketError {
    /// The error a URL, proxy setting or proxy answer the codec refused is reported as: the
    /// failure of the same name, with the same reason.
    init(_ failure: ConnectFailure) {
        switch failure {
        case .invalidURL(let reason): self = .invalidURL(reason)
        case .invalidConfiguration(let reason): self = .invalidConfiguration(reason)
        case .connectionFailed(let reason): self = .connectionFailed(reason)
        case .proxyRejected(let reason): self = .proxyRejected(reason)
        }
    }

    /// `body`'s result, or its failure reported as the error of the same name.
    static func reporting<Value>(_ body: () throws(ConnectFailure) -> Value) throws(WebSocketError) -> Value {
        do { return try body() } catch { throw WebSocketError(error) }
    }
}
