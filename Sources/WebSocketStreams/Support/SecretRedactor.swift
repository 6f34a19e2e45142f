import WebSocketCore

/// Removes a connection's secrets from log lines: the values of credential-bearing request
/// headers, the URL's query values and user info (with its Basic authorization form).
///
/// Our own log lines never contain them; this guards libwebsockets' lines, whose content
/// depends on its build and log level.
struct SecretRedactor: Sendable {
    /// The text that replaces a secret.
    static let replacement = "<redacted>"

    /// The strings to remove, longest first (so a value containing another goes whole).
    let secrets: [String]

    /// Header names whose values are credentials (compared lowercased, by substring).
    private static let secretHeaderWords = ["authorization", "cookie", "token", "key", "secret", "password", "session", "auth"]

    /// - Parameter sensitiveHeaders: Names whose values are secrets whatever they contain
    ///   (``WebSocketConfiguration/sensitiveHeaders``, any case), besides the usual words.
    init(url: WebSocketURL, headers: [String: String], sensitiveHeaders: Set<String> = []) {
        var secrets: [String] = []
        let sensitive = Set(sensitiveHeaders.map { $0.lowercased() })
        for (name, value) in headers {
            let lowered = name.lowercased()
            if sensitive.contains(lowered) || Self.secretHeaderWords.contains(where: { lowered.contains($0) }) {
                secrets.append(value)
                // "Bearer abc": the token alone may be logged too.
                if let space = value.firstIndex(of: " ") { secrets.append(String(value[value.index(after: space)...])) }
            }
        }
        if let queryStart = url.pathAndQuery.firstIndex(of: "?") {
            let query = url.pathAndQuery[url.pathAndQuery.index(after: queryStart)...]
            for pair in query.split(separator: "&") {
                if let equals = pair.firstIndex(of: "=") { secrets.append(String(pair[pair.index(after: equals)...])) }
            }
        }
        if let userInfo = url.userInfo {
            secrets.append(userInfo)
            if let colon = userInfo.firstIndex(of: ":") { secrets.append(String(userInfo[userInfo.index(after: colon)...])) }
            if let basic = url.basicAuthorization {
                secrets.append(basic)
                secrets.append(String(basic.dropFirst("Basic ".count)))
            }
        }
        // Very short values (e.g. "room=1") would redact unrelated text; 4 bytes is the floor.
        self.secrets = Array(Set(secrets.filter { $0.utf8.count >= 4 })).sorted { $0.utf8.count > $1.utf8.count }
    }

    /// `line` with every secret replaced.
    func redact(_ line: String) -> String {
        var line = line
        for secret in secrets where line.contains(secret) {
            line = line.replacing(secret, with: Self.replacement)
        }
        return line
    }
}
