import WebSocketStreams

/// wsdump's exit codes, as documented in `--help`.
enum ExitStatus: Int32, Sendable, CaseIterable {
    /// The connection closed normally: 1000 or 1001, sent by either side (also after
    /// `--count` was reached), or the user pressed Ctrl-C; and every message was sent.
    case normalClose = 0
    /// No connection was made: refused, unreachable, TLS failure, handshake rejected or
    /// timed out. Also a session that would have ended with 0 but left messages unsent
    /// (e.g. `--reconnect` while the server is down), which wsdump names on standard error.
    case connectionFailed = 1
    /// Bad flags or arguments, a malformed URL or an unusable setting (e.g. a missing certificate file).
    case usageError = 2
    /// The peer closed with an error code (anything but 1000/1001), or the connection
    /// ended with an error after opening (1006, pong timeout, message too big).
    case closedWithError = 3
    /// `--timeout` expired before the session ended (wsdump closed with 1000 first).
    case timedOut = 4
    /// Ctrl-C (or SIGTERM) before the connection opened: nothing was exchanged.
    case interrupted = 5
    /// `--require-reply` was given and no message was received (the session otherwise
    /// ended normally).
    case nothingReceived = 6

    /// The lines of the `EXIT CODES` section of `--help`.
    static let helpText = """
        EXIT CODES:
          0  closed normally: 1000 or 1001 by either side (also after --count or
             Ctrl-C), or with the code you chose with /close, and every message sent
          1  connection or handshake failure (refused, TLS, HTTP status, timeout),
             or messages left unsent (named on standard error)
          2  usage error (bad flags or arguments, malformed URL, unusable setting)
          3  closed by the peer with an error code (not 1000/1001), or the connection
             ended with an error after opening (1006, pong timeout, message too big)
          4  --timeout expired (wsdump closed with 1000 first)
          5  interrupted (Ctrl-C or SIGTERM) before the connection opened
          6  --require-reply was given and no message was received
        """

    /// The status for a connection that opened and then ended with `code` and `error`.
    ///
    /// - Parameter requestedCode: The code wsdump closed with when the user chose it
    ///   (`/close 4000`): ending with it is a normal end too.
    static func forEnd(code: WebSocketCloseCode?, error: WebSocketError?, requestedCode: WebSocketCloseCode? = nil) -> ExitStatus {
        if error != nil { return .closedWithError }
        switch code?.rawValue {
        case 1000, 1001: return .normalClose
        case let code? where code == requestedCode?.rawValue: return .normalClose
        default: return .closedWithError
        }
    }

    /// The status for a session that failed with `error`: a failed connection attempt, or
    /// a reconnecting socket that gave up.
    static func forFailure(_ error: WebSocketError) -> ExitStatus {
        switch error.code {
        case .invalidURL, .invalidConfiguration: .usageError
        case .closed, .protocolViolation, .messageTooLarge, .pongTimeout: .closedWithError
        default: .connectionFailed
        }
    }
}
