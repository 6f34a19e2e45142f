import FoundationEssentials

/// An HTTP proxy address from ``WebSocketConfiguration/proxy``:
/// `http://[user:password@]host:port` (the scheme may be omitted).
struct HTTPProxy: Sendable, Hashable {
    var userInfo: String?
    var host: String
    var port: Int

    init(parsing text: String) throws(WebSocketError) {
        func invalid(_ reason: String) -> WebSocketError {
            .invalidConfiguration("proxy '\(text)': \(reason)")
        }
        var rest = Substring(text)
        if let schemeEnd = rest.firstRange(of: "://") {
            let scheme = rest[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "http" else { throw invalid("only http:// proxies (CONNECT) are supported") }
            rest = rest[schemeEnd.upperBound...]
        }
        if rest.last == "/" { rest = rest.dropLast() }
        if let at = rest.lastIndex(of: "@") {
            userInfo = String(rest[..<at])
            rest = rest[rest.index(after: at)...]
        }
        let hostPart: Substring
        let portPart: Substring
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("an IPv6 address lacks its ']'") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.first == ":" else { throw invalid("a port is required, e.g. http://proxy:3128") }
            portPart = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw invalid("a port is required, e.g. http://proxy:3128") }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains("/") else { throw invalid("the host is missing") }
        guard let port = Int(portPart), (1...65535).contains(port) else {
            throw invalid("the port must be a number from 1 to 65535")
        }
        host = String(hostPart)
        self.port = port
    }

    /// The `CONNECT` request that opens a tunnel to `url`'s host and port (RFC 9110
    /// 9.3.6), with Basic `Proxy-Authorization` when the proxy URL has credentials.
    func connectRequest(to url: WebSocketURL) -> [UInt8] {
        let authority = (url.isIPv6Literal ? "[\(url.host)]" : url.host) + ":\(url.port)"
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let userInfo {
            let credentials = Data(WebSocketURL.percentDecoded(userInfo).utf8).base64EncodedString()
            request += "Proxy-Authorization: Basic \(credentials)\r\n"
        }
        request += "\r\n"
        return Array(request.utf8)
    }
}
