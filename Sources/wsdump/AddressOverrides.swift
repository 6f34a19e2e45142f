import Glibc
import WebSocketStreams

/// `--resolve HOST:PORT:ADDR[,ADDR...]` and `--connect-to ADDR`, as the resolver they
/// make: curl's way of testing one address of a name, or a name that DNS does not know yet.
enum AddressOverrides {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// The resolver for the options given, or `nil` (the system's) when neither is.
    static func resolver(resolve: [String], connectTo: String?, url: String) throws -> WebSocketResolver? {
        if let connectTo {
            let address = unbracketed(connectTo)
            guard isNumeric(address) else { throw Invalid(description: "--connect-to '\(connectTo)' is not a numeric address") }
            return WebSocketResolver { _ in [address] }
        }
        guard !resolve.isEmpty else { return nil }
        let urlPort = port(of: url)
        var table: [String: [String]] = [:]
        for entry in resolve {
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]) else {
                throw Invalid(description: "--resolve '\(entry)' is not HOST:PORT:ADDR")
            }
            if let urlPort, port != urlPort {
                throw Invalid(description: "--resolve '\(entry)': the port is not the URL's (\(urlPort))")
            }
            let addresses = parts[2].split(separator: ",").map { unbracketed(String($0)) }
            guard !addresses.isEmpty, addresses.allSatisfy(isNumeric) else {
                throw Invalid(description: "--resolve '\(entry)': '\(parts[2])' is not a list of numeric addresses")
            }
            table[parts[0].lowercased(), default: []] += addresses
        }
        let overrides = table
        return WebSocketResolver { host in
            if let addresses = overrides[host.lowercased()] { return addresses }
            return try await WebSocketResolver.system.addresses(of: host)
        }
    }

    /// `[::1]` without its brackets.
    private static func unbracketed(_ address: String) -> String {
        address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
    }

    static func isNumeric(_ address: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1
    }

    /// The port of a `ws://` or `wss://` URL (its default when it names none).
    private static func port(of url: String) -> Int? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        let secure = url.lowercased().hasPrefix("wss")
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let hostPort = authority.split(separator: "@").last ?? authority
        if let bracket = hostPort.lastIndex(of: "]") {
            let after = hostPort[hostPort.index(after: bracket)...]
            return after.hasPrefix(":") ? Int(after.dropFirst()) : (secure ? 443 : 80)
        }
        if let colon = hostPort.lastIndex(of: ":") { return Int(hostPort[hostPort.index(after: colon)...]) }
        return secure ? 443 : 80
    }
}
