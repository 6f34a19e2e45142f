import WebSocketCore

/// The redirects one connect has followed, and whether to follow the next: a value with
/// no I/O, that ``WebSocket/connect(to:configuration:eventLoop:)-(String,_,_)`` asks after
/// each refused upgrade.
///
/// It follows 301, 302, 303, 307 and 308 answers whose `Location` is absolute
/// (`ws`, `wss`, `http` mapped to `ws`, `https` to `wss`), scheme-relative (`//host/path`)
/// or relative (`/path`, `path`, `?query`), up to ``WebSocketConfiguration/maxRedirects``
/// hops. It never follows from a secure URL to a plain one, never visits a URL twice, and
/// says so in the error, with the chain. When a hop changes the origin (scheme, host or
/// port), the next requests go without the sensitive headers
/// (``WebSocketConfiguration/sensitiveHeaders``).
struct RedirectChain {
    /// The URLs connected to so far: the original first, the current last.
    private(set) var visited: [WebSocketURL]
    let maxRedirects: Int
    /// Whether a hop so far changed the origin (credentials have been dropped).
    private(set) var crossedOrigin = false

    init(start: WebSocketURL, maxRedirects: Int) {
        visited = [start]
        self.maxRedirects = maxRedirects
    }

    /// The URL to connect to now.
    var current: WebSocketURL { visited[visited.count - 1] }

    /// The redirects followed so far.
    var redirects: Int { visited.count - 1 }

    /// The statuses followed.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether `error` is a redirect a chain looks at: with any `maxRedirects`, since with 0
    /// the chain refuses it saying that redirects are off, and where it pointed.
    static func isRedirect(_ error: WebSocketError, maxRedirects: Int) -> Bool {
        error.code == .handshakeRejected && error.httpStatus.map(redirectStatuses.contains) == true
    }

    /// What to do after the current URL's upgrade was refused with `error`.
    enum Decision: Equatable {
        /// Not a redirect (or redirects are off): `error` stands as it is.
        case notARedirect
        /// Connect to ``RedirectChain/current`` now; `dropCredentials` when this hop changed
        /// the origin for the first time.
        case follow(dropCredentials: Bool)
        /// A redirect that may not be followed: throw this.
        case refuse(WebSocketError)
    }

    /// Decides on the refusal `error` of the current URL, moving to the next URL when it is
    /// a redirect to follow.
    mutating func next(after error: WebSocketError) -> Decision {
        guard Self.isRedirect(error, maxRedirects: maxRedirects), let status = error.httpStatus else { return .notARedirect }
        let from = current
        guard let location = error.header(named: "Location"),
              !location.isEmpty else {
            return .refuse(refusal(error, "the server answered \(status) without a Location to follow (\(from.redacted))"))
        }
        let target: WebSocketURL
        do {
            target = try Self.resolve(location, against: from)
        } catch {
            return .refuse(refusal(
                error, "the server redirected (\(status)) to '\(location)', which is not a WebSocket URL: \(error.reason ?? "\(error)")"))
        }
        if maxRedirects <= 0 {
            return .refuse(refusal(error, "the server redirected (\(status)) from \(from.redacted) to \(target.redacted), "
                + "and redirects are off (maxRedirects is 0; wsdump: --max-redirects)"))
        }
        if from.isSecure, !target.isSecure {
            return .refuse(refusal(error, "refused to follow a redirect from \(from.redacted) to \(target.redacted): it would drop TLS (wss to ws)"))
        }
        if visited.contains(where: { $0.description == target.description }) {
            return .refuse(refusal(error, "redirect loop: \(chain(then: target))"))
        }
        if redirects >= maxRedirects {
            return .refuse(refusal(error, "more than \(maxRedirects) redirects (maxRedirects): \(chain(then: target))"))
        }
        let changesOrigin = !Self.sameOrigin(from, target)
        visited.append(target)
        let dropCredentials = changesOrigin && !crossedOrigin
        if changesOrigin { crossedOrigin = true }
        return .follow(dropCredentials: dropCredentials)
    }

    /// `headers` without the ones a new origin must not see: those named in `sensitive`
    /// (``WebSocketConfiguration/sensitiveHeaders``, any case).
    static func withoutCredentials(_ headers: [String: String], sensitive: Set<String>) -> [String: String] {
        let lowered = Set(sensitive.map { $0.lowercased() })
        return headers.filter { !lowered.contains($0.key.lowercased()) }
    }

    /// Whether `a` and `b` have the same scheme, host and port (and Unix socket).
    static func sameOrigin(_ a: WebSocketURL, _ b: WebSocketURL) -> Bool {
        a.isSecure == b.isSecure && a.host == b.host && a.port == b.port && a.unixSocketPath == b.unixSocketPath
    }

    /// The chain so far and `next`, as "ws://a/x?room=1 → ws://b/y?token=<redacted> → ..."
    /// (query values that look secret redacted).
    private func chain(then next: WebSocketURL) -> String {
        (visited + [next]).map(\.redacted).joined(separator: " → ")
    }

    /// `error` (the refusal, its status, headers and body) with `reason`.
    private func refusal(_ error: WebSocketError, _ reason: String) -> WebSocketError {
        WebSocketError(
            code: .handshakeRejected, reason: reason, httpStatus: error.httpStatus, headers: error.headers, body: error.body)
    }

    /// The URL `location` names, read against `base` (RFC 3986 section 5.2, for the forms a
    /// `Location` takes). A fragment is dropped; user info is kept only on a path-relative hop.
    static func resolve(_ location: String, against base: WebSocketURL) throws(WebSocketError) -> WebSocketURL {
        var location = location.trimmingWhitespace
        if let hash = location.firstIndex(of: "#") { location = String(location[..<hash]) }
        let lowered = location.lowercased()
        for (scheme, replacement) in [("https://", "wss://"), ("http://", "ws://"), ("wss://", "wss://"), ("ws://", "ws://")]
        where lowered.hasPrefix(scheme) {
            return try WebSocketError.reporting { () throws(ConnectFailure) in
                try WebSocketURL(parsing: replacement + location.dropFirst(scheme.count))
            }
        }
        if location.hasPrefix("//") {
            return try WebSocketError.reporting { () throws(ConnectFailure) in
                try WebSocketURL(parsing: (base.isSecure ? "wss:" : "ws:") + location)
            }
        }
        if let colon = location.firstIndex(of: ":"), !location[..<colon].contains("/"), !location[..<colon].contains("?") {
            throw .invalidURL("'\(location)': the scheme \(location[..<colon]) is not ws, wss, http or https")
        }
        var next = base
        if location.isEmpty { return next }
        if location.hasPrefix("/") {
            next.pathAndQuery = location
        } else if location.hasPrefix("?") {
            next.pathAndQuery = String(base.pathAndQuery.prefix { $0 != "?" }) + location
        } else {
            let path = base.pathAndQuery.prefix { $0 != "?" }
            let directory = path.lastIndex(of: "/").map { path[...$0] } ?? "/"
            next.pathAndQuery = directory + location
        }
        next.pathAndQuery = removingDotSegments(next.pathAndQuery)
        if let bad = next.pathAndQuery.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw .invalidURL("'\(location)': it contains \(bad == " " ? "a space" : "a control character")")
        }
        return next
    }

    /// `path?query` with `.` and `..` segments of the path resolved (RFC 3986 section 5.2.4).
    static func removingDotSegments(_ pathAndQuery: String) -> String {
        let queryStart = pathAndQuery.firstIndex(of: "?") ?? pathAndQuery.endIndex
        let path = pathAndQuery[..<queryStart]
        guard path.contains(".") else { return pathAndQuery }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/") + pathAndQuery[queryStart...]
    }
}

extension WebSocketURL {
    /// The URL written out (without user info), with the values of query parameters that
    /// look secret replaced by `<redacted>`: those named like a credential (`token`, `key`,
    /// `auth`, `sig`, ...) and long token-like ones, so hops stay told apart without
    /// leaking what a URL carries.
    var redacted: String {
        let text = description
        guard let questionMark = text.firstIndex(of: "?") else { return text }
        let query = text[text.index(after: questionMark)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            guard let equals = parameter.firstIndex(of: "=") else { return String(parameter) }
            let name = parameter[..<equals].lowercased()
            let value = parameter[parameter.index(after: equals)...]
            let secretName = Self.secretQueryWords.contains { name.contains($0) }
            let tokenLike = value.count >= 24 && value.allSatisfy { $0.isLetter || $0.isNumber || "-_.~+/=%".contains($0) }
            return secretName || tokenLike ? String(parameter[...equals]) + SecretRedactor.replacement : String(parameter)
        }
        return text[...questionMark] + parameters.joined(separator: "&")
    }

    /// Parts of query parameter names that mark a credential (compared lowercased).
    private static let secretQueryWords = [
        "token", "key", "secret", "password", "passwd", "auth", "sig", "session", "jwt", "credential", "code",
    ]
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
