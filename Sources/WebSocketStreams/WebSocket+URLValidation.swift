import WebSocketCore

extension WebSocket {
    /// Checks that `url` is one ``connect(to:configuration:eventLoop:)-(String,_,_)`` accepts, without
    /// connecting: the same rules and the same error, so a command-line tool or a settings
    /// screen can reject a bad URL before anything starts.
    ///
    /// ```swift
    /// do {
    ///     try WebSocket.validateURL(input)
    /// } catch {
    ///     print(error)   // invalid URL: 'http://example.org': the scheme must be ws or wss, not 'http'
    /// }
    /// ```
    ///
    /// - Throws: ``WebSocketError/invalidURL(_:)`` saying what is wrong.
    public static func validateURL(_ url: String) throws(WebSocketError) {
        _ = try WebSocketError.reporting { () throws(ConnectFailure) in try WebSocketURL(parsing: url) }
    }
}
