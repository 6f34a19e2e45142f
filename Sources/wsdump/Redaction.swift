/// Hides secrets in what `-v` prints (headers, URLs) unless `--show-secrets` is given.
///
/// Secret headers are `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, and
/// any name containing `token`, `secret`, `password` or `api-key`, and those named by
/// `--sensitive-header`. `Sec-WebSocket-Key` and
/// `Sec-WebSocket-Accept` are shown: they are a nonce and its hash, not credentials. In URLs, user info and the values of query parameters named
/// like a token, key, secret, password or auth are hidden.
struct Redactor: Sendable {
    /// What stands in for a hidden value.
    static let placeholder = "<redacted>"

    /// Whether secrets are shown as they are (`--show-secrets`).
    var showsSecrets: Bool
    /// More header names whose values are hidden, lowercased: the configuration's
    /// `sensitiveHeaders` (`--sensitive-header`).
    let sensitiveHeaders: Set<String>

    init(showsSecrets: Bool, sensitiveHeaders: Set<String> = []) {
        self.showsSecrets = showsSecrets
        self.sensitiveHeaders = Set(sensitiveHeaders.map { $0.lowercased() })
    }

    /// `value` as it may be shown for header `name`.
    func headerValue(_ value: String, name: String) -> String {
        let isSecret = Self.isSecretHeader(name) || sensitiveHeaders.contains(name.lowercased())
        return showsSecrets || !isSecret ? value : Self.placeholder
    }

    /// `url` with its user info and secret query values hidden.
    func url(_ url: String) -> String {
        showsSecrets ? url : Self.redactedURL(url)
    }

    /// Whether header `name` (any case) carries a secret.
    static func isSecretHeader(_ name: String) -> Bool {
        let lowered = name.lowercased()
        let exact: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]
        return exact.contains(lowered)
            || ["token", "secret", "password", "api-key", "api_key", "apikey"].contains(where: lowered.contains)
    }

    /// Whether a query parameter called `name` (any case) carries a secret.
    static func isSecretQueryParameter(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ["token", "key", "secret", "password", "passwd", "auth", "signature"].contains(where: lowered.contains)
    }

    /// `url` with user info and secret query values replaced by ``placeholder``.
    static func redactedURL(_ url: String) -> String {
        var result = ""
        var rest = Substring(url)
        if let schemeEnd = rest.firstRange(of: "://") {
            result += rest[..<schemeEnd.upperBound]
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                result += placeholder + String(authority[at...])
            } else {
                result += authority
            }
            rest = rest[authorityEnd...]
        }
        guard let questionMark = rest.firstIndex(of: "?") else { return result + rest }
        result += rest[...questionMark]
        let query = rest[rest.index(after: questionMark)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            guard let equals = parameter.firstIndex(of: "="),
                  isSecretQueryParameter(String(parameter[..<equals])) else { return String(parameter) }
            return String(parameter[...equals]) + placeholder
        }
        return result + parameters.joined(separator: "&")
    }
}
