import CLibWebSockets

/// The HTTP answers the test server writes itself rather than through libwebsockets: the
/// `101 Switching Protocols` of raw routes, and the error response of a rejected upgrade.
/// Shared by the libwebsockets listener and the raw TLS listener.
enum HTTPResponses {
    /// A valid `101 Switching Protocols` answer to `Sec-WebSocket-Key: key`, optionally
    /// accepting `extensions`; nil when the accept value cannot be computed (a key longer
    /// than any client sends).
    static func upgrade(key: String, extensions: String? = nil) -> [UInt8]? {
        var accept = [CChar](repeating: 0, count: 64)
        guard wss_websocket_accept(key, &accept, accept.count) == 1 else { return nil }
        let acceptText = accept.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(acceptText)\r\n"
        if let extensions { response += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        return Array((response + "\r\n").utf8)
    }

    /// A complete error response with a plain-text `body`: 401 adds `WWW-Authenticate`,
    /// 429 and 503 a `Retry-After` (1 unless `retryAfter` says otherwise), and `location`
    /// a `Location`.
    static func rejection(
        status: Int, body: String, retryAfter: String?, location: String?, headers: [String: String] = [:]
    ) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        if let location { head += "Location: \(location)\r\n" }
        let named = Set(headers.keys.map { $0.lowercased() })
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            // A handler's header is the test's word, but never a second head.
            let clean = { (text: String) in text.filter { $0 != "\r" && $0 != "\n" } }
            head += "\(clean(name)): \(clean(value))\r\n"
        }
        if status == 401, !named.contains("www-authenticate") { head += "WWW-Authenticate: Bearer realm=\"test-server\"\r\n" }
        if let retryAfter = retryAfter ?? ((status == 429 || status == 503) && !named.contains("retry-after") ? "1" : nil) {
            head += "Retry-After: \(retryAfter)\r\n"
        }
        head += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
