import WebSocketStreams

/// The opening handshake as `-vv` shows it, in the style of Python wsdump's trace: the
/// request the connection really wrote and the response head it read, as the SDK reports
/// them (``WebSocketWireEvent/httpHead``).
///
/// The SDK has already redacted the credentials it knows of (unless `--show-secrets` turned
/// ``WebSocketConfiguration/redactsSecretsInLogs`` off); the ``Redactor`` also hides the
/// values of secret-named fields and query parameters, e.g. a token the server sends back.
enum HandshakeDescription {
    /// The block for a handshake event, from `--- request header ---` (or `--- response
    /// header ---`) to the closing rule; `nil` for other events.
    ///
    /// - Parameter proxy: The proxy the request went through, noted after the request.
    static func lines(for event: WebSocketWireEvent, proxy: String? = nil, redactor: Redactor) -> [String]? {
        guard let head = event.httpHead else { return nil }
        let isRequest = event.kind == .handshakeRequestSent
        var lines = [isRequest ? "--- request header ---" : "--- response header ---"]
        let headLines = head.split(separator: "\r\n", omittingEmptySubsequences: true).map(String.init)
        if let startLine = headLines.first {
            lines.append(isRequest ? redactedRequestLine(startLine, redactor: redactor) : startLine)
        }
        for field in headLines.dropFirst() {
            guard let colon = field.firstIndex(of: ":") else {
                lines.append(field)
                continue
            }
            let name = String(field[..<colon])
            let value = field[field.index(after: colon)...].drop { $0 == " " }
            lines.append("\(name): \(redactor.headerValue(String(value), name: name))")
        }
        if isRequest, let proxy {
            lines.append("(through the proxy \(redactor.url(proxy)))")
        }
        lines.append("-----------------------")
        return lines
    }

    /// `-v`'s line for an answer to the upgrade that redirects, e.g. `redirected (301) to
    /// wss://example.org/feed`; `nil` for any other event or answer.
    static func redirectLine(for event: WebSocketWireEvent, redactor: Redactor) -> String? {
        guard event.kind == .handshakeResponseReceived, let head = event.httpHead else { return nil }
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }),
              [301, 302, 303, 307, 308].contains(status) else { return nil }
        let location = lines.dropFirst().first { $0.lowercased().hasPrefix("location:") }
            .map { String($0.dropFirst("location:".count).drop { $0 == " " }) }
        return "redirected (\(status)) to \(location.map { redactor.url($0) } ?? "(no Location)")"
    }

    /// `GET /path?query HTTP/1.1` with the target's secret query values hidden.
    private static func redactedRequestLine(_ line: String, redactor: Redactor) -> String {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return line }
        return "\(parts[0]) \(redactor.url(String(parts[1]))) \(parts[2])"
    }
}
