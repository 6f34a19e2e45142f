import FoundationEssentials

/// A parsed `ws://` or `wss://` URL (RFC 6455 section 3), or a `ws+unix:` /
/// `wss+unix:` URL naming a Unix domain socket.
///
/// Parsing is strict and every rejection says why: schemes other than `ws`/`wss`, a
/// missing host, a bad port, a fragment (not allowed in WebSocket URLs), spaces or
/// control characters. User info (`wss://user:password@host/`) becomes a Basic
/// `Authorization` header.
///
/// IPv6 and IPv4 literals work for `ws://` and `wss://` (a certificate must then carry the
/// address as an IP subject alternative name).
///
/// Unix domain sockets use the form of node's `ws` package:
/// `ws+unix:///run/daemon.sock:/path?query` (the socket's path, then `:` and the request
/// path; without `:` the request path is `/`). Such a URL's host is `localhost`: it is what
/// `Host` carries and, for `wss+unix:`, the name the server's certificate must have.
package struct WebSocketURL: Sendable, Hashable, CustomStringConvertible {
    /// `true` for `wss`.
    package var isSecure: Bool
    /// The host without IPv6 brackets, lowercased.
    package var host: String
    /// The port, defaulting to 80 (`ws`) or 443 (`wss`).
    package var port: Int
    /// The path and query, at least `/`.
    package var pathAndQuery: String
    /// `user:password` from the URL, if any.
    package var userInfo: String?
    /// The Unix domain socket to connect to (`ws+unix:` and `wss+unix:`), or `nil` for TCP.
    package var unixSocketPath: String?

    /// Whether ``host`` is an IPv6 literal.
    package var isIPv6Literal: Bool { host.contains(":") }

    /// The `Host` header value: the host (bracketed if IPv6), with the port when not the default.
    package var hostHeader: String {
        if unixSocketPath != nil { return host }
        let bracketed = isIPv6Literal ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? bracketed : "\(bracketed):\(port)"
    }

    /// The URL written back out, without user info.
    package var description: String {
        if let unixSocketPath { return "\(isSecure ? "wss" : "ws")+unix://\(unixSocketPath):\(pathAndQuery)" }
        return "\(isSecure ? "wss" : "ws")://\(hostHeader)\(pathAndQuery)"
    }

    /// Parses `string`, throwing ``ConnectFailure/invalidURL(_:)`` with the reason.
    package init(parsing string: String) throws(ConnectFailure) {
        func invalid(_ reason: String) -> ConnectFailure { .invalidURL("'\(string)': \(reason)") }
        guard !string.isEmpty else { throw .invalidURL("the URL is empty") }
        if let bad = string.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw invalid(bad == " " ? "it contains a space" : "it contains a control character")
        }
        if let unixURL = try Self.parseUnixSocketURL(string) {
            self = unixURL
            return
        }
        guard let schemeEnd = string.firstRange(of: "://") else {
            throw invalid("expected ws://host/path or wss://host/path")
        }
        let scheme = string[..<schemeEnd.lowerBound].lowercased()
        switch scheme {
        case "ws": isSecure = false
        case "wss": isSecure = true
        default: throw invalid("the scheme must be ws, wss, ws+unix or wss+unix, not '\(scheme)'")
        }
        let rest = string[schemeEnd.upperBound...]
        if rest.contains("#") { throw invalid("WebSocket URLs may not have a fragment (#...)") }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        let path = rest[authorityEnd...]
        pathAndQuery = path.isEmpty ? "/" : (path.first == "?" ? "/" + path : String(path))

        if let at = authority.lastIndex(of: "@") {
            userInfo = String(authority[..<at])
            authority = authority[authority.index(after: at)...]
        }
        var portText: Substring?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("an IPv6 address lacks its ']'") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let afterBracket = authority[authority.index(after: close)...]
            if !afterBracket.isEmpty {
                guard afterBracket.first == ":" else { throw invalid("unexpected text after the IPv6 address") }
                portText = afterBracket.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw invalid("'\(host)' is not an IPv6 address")
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                portText = authority[authority.index(after: colon)...]
            } else {
                host = String(authority)
            }
            let allowed = host.unicodeScalars.allSatisfy { scalar in
                scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~%!$&'()*+,;=".unicodeScalars.contains(scalar)
            }
            guard allowed else { throw invalid("'\(host)' is not a valid host name") }
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        host = host.lowercased()
        if let portText {
            guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("the port must be a number from 1 to 65535, not '\(portText)'")
            }
            port = value
        } else {
            port = isSecure ? 443 : 80
        }
    }

    private init(unixSocketPath: String, isSecure: Bool, pathAndQuery: String) {
        self.isSecure = isSecure
        host = "localhost"
        port = isSecure ? 443 : 80
        self.pathAndQuery = pathAndQuery
        self.unixSocketPath = unixSocketPath
    }

    /// `ws+unix:` and `wss+unix:` URLs (`nil` for any other scheme).
    private static func parseUnixSocketURL(_ string: String) throws(ConnectFailure) -> WebSocketURL? {
        guard let colon = string.firstIndex(of: ":") else { return nil }
        let isSecure: Bool
        switch string[..<colon].lowercased() {
        case "ws+unix": isSecure = false
        case "wss+unix": isSecure = true
        default: return nil
        }
        var rest = string[string.index(after: colon)...]
        if rest.hasPrefix("//") { rest = rest.dropFirst(2) }
        if rest.contains("#") { throw .invalidURL("'\(string)': WebSocket URLs may not have a fragment (#...)") }
        let socketPath: Substring
        var request: Substring = "/"
        if let separator = rest.firstIndex(of: ":") {
            socketPath = rest[..<separator]
            request = rest[rest.index(after: separator)...]
            if request.isEmpty { request = "/" }
            if request.first == "?" { request = "/" + request }
            guard request.first == "/" else {
                throw .invalidURL("'\(string)': the request path after the socket's path must start with '/'")
            }
        } else {
            socketPath = rest
        }
        guard !socketPath.isEmpty else {
            throw .invalidURL("'\(string)': the socket's path is missing, e.g. ws+unix:///run/app.sock:/path")
        }
        // sun_path holds 107 bytes and a terminating NUL.
        guard socketPath.utf8.count < 108 else {
            throw .invalidURL("'\(string)': a Unix socket path is at most 107 bytes long")
        }
        return WebSocketURL(unixSocketPath: String(socketPath), isSecure: isSecure, pathAndQuery: String(request))
    }

    /// The `Authorization: Basic ...` value for ``userInfo``.
    package var basicAuthorization: String? {
        guard let userInfo else { return nil }
        let decoded = Self.percentDecoded(userInfo)
        return "Basic " + Data(decoded.utf8).base64EncodedString()
    }
}

extension WebSocketURL {
    /// `%XX` escapes decoded; malformed escapes are kept as written.
    package static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
