import Glibc

/// Chooses the proxy for a URL from environment variables, as `WebSocketProxy.environment`
/// documents (curl's rules). A pure value: tests give it the variables.
package struct ProxyEnvironment: Sendable {
    package var variables: [String: String]

    /// The process's environment now.
    package static var current: ProxyEnvironment {
        var variables: [String: String] = [:]
        for name in ["https_proxy", "HTTPS_PROXY", "http_proxy", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            if let value = getenv(name) { variables[name] = String(cString: value) }
        }
        return ProxyEnvironment(variables: variables)
    }

    /// The proxy URL to use for `url`, or `nil` for a direct connection.
    package func proxy(for url: WebSocketURL) -> String? {
        guard url.unixSocketPath == nil else { return nil }
        let names = url.isSecure ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy"]
        guard let proxy = first(of: names + ["all_proxy", "ALL_PROXY"]) else { return nil }
        if let exceptions = first(of: ["no_proxy", "NO_PROXY"]), Self.bypasses(url.host, exceptions: exceptions) {
            return nil
        }
        return proxy
    }

    /// The first of `names` that is set and not empty.
    private func first(of names: [String]) -> String? {
        for name in names {
            if let value = variables[name]?.trimmingSpaces, !value.isEmpty { return value }
        }
        return nil
    }

    /// Whether `host` is listed in a `no_proxy` value: `*`, the host itself, or a domain
    /// it belongs to (`example.org` and `.example.org` both match `a.example.org`); IPv6
    /// entries may be bracketed, and a `:port` suffix on an entry is ignored.
    package static func bypasses(_ host: String, exceptions: String) -> Bool {
        let host = host.lowercased()
        for rawEntry in exceptions.split(separator: ",") {
            var entry = Substring(rawEntry.trimmingSpaces.lowercased())
            if entry.isEmpty { continue }
            if entry == "*" { return true }
            if entry.first == "[", let close = entry.firstIndex(of: "]") {
                entry = entry[entry.index(after: entry.startIndex)..<close]
            } else if entry.filter({ $0 == ":" }).count == 1, let colon = entry.lastIndex(of: ":") {
                entry = entry[..<colon]
            }
            if entry.first == "." { entry = entry.dropFirst() }
            if entry.isEmpty { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
