import FoundationEssentials

/// A proxy's address and kind, parsed from a `WebSocketProxy` URL:
/// `http://[user:password@]host:port` (the scheme may be omitted), `socks5://...` or
/// `socks5h://...`.
package struct ProxyAddress: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// An HTTP proxy: a `CONNECT` tunnel.
        case httpConnect
        /// A SOCKS5 proxy; `resolvesNames` when it is given the host name (`socks5h`)
        /// instead of an address resolved here.
        case socks5(resolvesNames: Bool)
    }

    package var kind: Kind
    package var userInfo: String?
    package var host: String
    package var port: Int

    package init(parsing text: String) throws(ConnectFailure) {
        func invalid(_ reason: String) -> ConnectFailure {
            .invalidConfiguration("proxy '\(Self.redactingCredentials(text))': \(reason)")
        }
        var rest = Substring(text)
        kind = .httpConnect
        if let schemeEnd = rest.firstRange(of: "://") {
            let scheme = rest[..<schemeEnd.lowerBound].lowercased()
            switch scheme {
            case "http": kind = .httpConnect
            case "socks5": kind = .socks5(resolvesNames: false)
            case "socks5h": kind = .socks5(resolvesNames: true)
            case "https": throw invalid("TLS to the proxy (https://) is not supported; use an http:// or socks5:// proxy")
            default: throw invalid("only http://, socks5:// and socks5h:// proxies are supported, not '\(scheme)://'")
            }
            rest = rest[schemeEnd.upperBound...]
        }
        if rest.last == "/" { rest = rest.dropLast() }
        if let at = rest.lastIndex(of: "@") {
            userInfo = String(rest[..<at])
            rest = rest[rest.index(after: at)...]
        }
        let hostPart: Substring
        let portPart: Substring
        let example = kind == .httpConnect ? "http://proxy:3128" : "socks5://proxy:1080"
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("an IPv6 address lacks its ']'") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.first == ":" else { throw invalid("a port is required, e.g. \(example)") }
            portPart = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw invalid("a port is required, e.g. \(example)") }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains("/") else { throw invalid("the host is missing") }
        guard let port = Int(portPart), (1...65535).contains(port) else {
            throw invalid("the port must be a number from 1 to 65535")
        }
        host = String(hostPart)
        self.port = port
        if case .socks5 = kind, let (user, password) = credentials {
            guard user.utf8.count <= 255, password.utf8.count <= 255 else {
                throw invalid("SOCKS5 user names and passwords are at most 255 bytes")
            }
        }
    }

    /// The user name and password, percent-decoded, when the URL has them.
    package var credentials: (user: String, password: String)? {
        guard let userInfo else { return nil }
        let decoded = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let user = WebSocketURL.percentDecoded(String(decoded[0]))
        let password = decoded.count > 1 ? WebSocketURL.percentDecoded(String(decoded[1])) : ""
        return (user, password)
    }

    /// Words for log lines and errors: kind and address, no credentials.
    package var summary: String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        switch kind {
        case .httpConnect: return "HTTP proxy \(address)"
        case .socks5: return "SOCKS5 proxy \(address)"
        }
    }

    /// The `CONNECT` request that opens a tunnel to `url`'s host and port (RFC 9110
    /// 9.3.6), with Basic `Proxy-Authorization` when the proxy URL has credentials, else
    /// `proxyAuthorization` (the `Proxy-Authorization` given in the configuration's
    /// headers, which never goes to the server) when given.
    package func connectRequest(to url: WebSocketURL, proxyAuthorization: String? = nil) -> [UInt8] {
        let authority = (url.isIPv6Literal ? "[\(url.host)]" : url.host) + ":\(url.port)"
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let userInfo {
            let credentials = Data(WebSocketURL.percentDecoded(userInfo).utf8).base64EncodedString()
            request += "Proxy-Authorization: Basic \(credentials)\r\n"
        } else if let proxyAuthorization {
            request += "Proxy-Authorization: \(proxyAuthorization)\r\n"
        }
        request += "\r\n"
        return Array(request.utf8)
    }

    /// `text` (a proxy URL) with the password of its user info replaced by `<redacted>`.
    package static func redactingCredentials(_ text: String) -> String {
        let authorityStart = text.firstRange(of: "://")?.upperBound ?? text.startIndex
        let authority = text[authorityStart...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return text }
        let userInfo = authority[..<at]
        let user = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return String(text[..<authorityStart]) + user + ":<redacted>" + String(text[at...])
    }
}
