import WebSocketCore

/// Refuses CR, LF and NUL wherever they would reach the upgrade request: in the URL (its
/// host, also percent-decoded, since the host goes into `Host` and SNI as written; its
/// path and query, which go into the request line), header names and values,
/// subprotocols and the origin. One such byte lets a caller's input end a header line and
/// start another (header injection, request smuggling). Checked before any byte is sent;
/// the error is ``WebSocketError/invalidConfiguration(_:)`` naming the field.
enum RequestInjectionGuard {
    /// Whether `text` contains CR, LF or NUL.
    static func isInjection(_ text: some StringProtocol) -> Bool {
        text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }

    /// `text` quoted with its control characters escaped, for an error message.
    static func quoted(_ text: some StringProtocol) -> String {
        String(text).debugDescription
    }

    /// Checks the URL as given, before it is parsed: names the part that holds CR, LF or NUL.
    static func check(url: String) throws(WebSocketError) {
        guard let part = injectedPart(of: url) else { return }
        throw .invalidConfiguration("the URL's \(part) contains CR, LF or NUL, which would break the request (header injection)")
    }

    /// Which part of `url` holds CR, LF or NUL (raw, or percent-decoded in the host); nil when none does.
    static func injectedPart(of url: String) -> String? {
        guard let schemeEnd = url.firstRange(of: "://") else { return isInjection(url) ? "text" : nil }
        if isInjection(url[..<schemeEnd.lowerBound]) { return "scheme" }
        let rest = url[schemeEnd.upperBound...]
        if url.lowercased().hasPrefix("ws+unix:") || url.lowercased().hasPrefix("wss+unix:") {
            return isInjection(rest) ? "socket path or request path" : nil
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var host = rest[..<authorityEnd]
        if let at = host.lastIndex(of: "@") {
            if isInjection(host[..<at]) { return "user info" }
            host = host[host.index(after: at)...]
        }
        if isInjection(host) || isInjection(WebSocketURL.percentDecoded(String(host))) { return "host" }
        let pathAndQuery = rest[authorityEnd...]
        let queryStart = pathAndQuery.firstIndex(of: "?") ?? pathAndQuery.endIndex
        if isInjection(pathAndQuery[..<queryStart]) { return "path" }
        if isInjection(pathAndQuery[queryStart...]) { return "query" }
        return nil
    }

    /// Checks header names and values, subprotocols and the origin.
    static func check(_ configuration: WebSocketConfiguration) throws(WebSocketError) {
        for (name, value) in configuration.headers {
            if isInjection(name) {
                throw .invalidConfiguration("header name \(quoted(name)) contains CR, LF or NUL (header injection)")
            }
            if isInjection(value) {
                throw .invalidConfiguration("the value of header '\(name)' contains CR, LF or NUL (header injection)")
            }
        }
        for subprotocol in configuration.subprotocols where isInjection(subprotocol) {
            throw .invalidConfiguration("subprotocol \(quoted(subprotocol)) contains CR, LF or NUL (header injection)")
        }
        if let origin = configuration.origin, isInjection(origin) {
            throw .invalidConfiguration("the origin contains CR, LF or NUL (header injection)")
        }
    }
}
