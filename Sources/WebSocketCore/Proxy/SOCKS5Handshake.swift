/// The client's side of a SOCKS5 proxy's opening exchange (RFC 1928, with the
/// username/password method of RFC 1929): a pure value that takes the proxy's bytes and
/// says what to send next, so it is tested without sockets.
///
/// ```
/// client: 05 n methods...                  proxy: 05 method
/// (method 02) client: 01 ulen user plen pw  proxy: 01 status
/// client: 05 01 00 atyp address port       proxy: 05 reply 00 atyp address port
/// ```
package struct SOCKS5Handshake: Sendable {
    /// Where the proxy is asked to connect.
    package enum Destination: Sendable, Hashable {
        /// A 4-byte IPv4 or 16-byte IPv6 address, resolved on this side.
        case address([UInt8])
        /// A host name the proxy resolves (`socks5h`).
        case hostName(String)
    }

    /// What to do after the proxy's bytes were taken.
    package enum Action: Equatable {
        /// Wait for more bytes from the proxy.
        case waitForMore
        /// Send these bytes to the proxy, then wait for its answer.
        case send([UInt8])
        /// The tunnel is open: what follows is the server's. `leftover` is what came after
        /// the proxy's last answer in the same read.
        case tunnelOpen(leftover: [UInt8])
    }

    private enum Step {
        case awaitingMethod
        case awaitingAuthentication
        case awaitingReply
        case open
    }

    private let destination: Destination
    private let port: Int
    private let credentials: (user: String, password: String)?
    private let proxyName: String
    private var step = Step.awaitingMethod
    private var input: [UInt8] = []

    /// - Parameters:
    ///   - proxyName: How errors name the proxy, e.g. `SOCKS5 proxy 127.0.0.1:1080`.
    package init(destination: Destination, port: Int, credentials: (user: String, password: String)?, proxyName: String) {
        self.destination = destination
        self.port = port
        self.credentials = credentials
        self.proxyName = proxyName
    }

    /// The first bytes to send: the methods this side offers (no authentication, and
    /// username/password when there are credentials).
    package var greeting: [UInt8] {
        credentials == nil ? [0x05, 0x01, 0x00] : [0x05, 0x02, 0x00, 0x02]
    }

    /// Takes bytes from the proxy. Throws ``ConnectFailure/proxyRejected(_:)`` when the
    /// proxy refuses (no acceptable method, wrong credentials, a failed connect), and
    /// ``ConnectFailure/connectionFailed(_:)`` when it does not speak SOCKS5.
    package mutating func receive(_ bytes: some Collection<UInt8>) throws(ConnectFailure) -> Action {
        input.append(contentsOf: bytes)
        var action = Action.waitForMore
        while true {
            switch step {
            case .awaitingMethod:
                guard input.count >= 2 else { return action }
                guard input[0] == 0x05 else { throw notSOCKS5() }
                let method = input[1]
                input.removeFirst(2)
                switch method {
                case 0x00:
                    step = .awaitingReply
                    action = .send(connectRequest)
                case 0x02 where credentials != nil:
                    step = .awaitingAuthentication
                    action = .send(authenticationRequest)
                case 0xFF:
                    throw .proxyRejected(
                        "the \(proxyName) accepts none of the offered authentication methods"
                            + (credentials == nil ? " (it may need a user name and password)" : ""))
                default:
                    throw .connectionFailed("the \(proxyName) chose authentication method \(method), which was not offered")
                }
            case .awaitingAuthentication:
                guard input.count >= 2 else { return action }
                guard input[0] == 0x01 else { throw notSOCKS5() }
                let status = input[1]
                input.removeFirst(2)
                guard status == 0x00 else { throw .proxyRejected("the \(proxyName) refused the user name and password") }
                step = .awaitingReply
                action = .send(connectRequest)
            case .awaitingReply:
                guard input.count >= 5 else { return action }
                guard input[0] == 0x05 else { throw notSOCKS5() }
                let addressLength: Int
                switch input[3] {
                case 0x01: addressLength = 4
                case 0x04: addressLength = 16
                case 0x03: addressLength = 1 + Int(input[4])
                default: throw .connectionFailed("the \(proxyName) answered with address type \(input[3]), which SOCKS5 does not have")
                }
                let length = 4 + addressLength + 2
                guard input.count >= length else { return action }
                let reply = input[1]
                guard reply == 0x00 else {
                    throw .proxyRejected("the \(proxyName) could not connect to \(destinationDescription): \(Self.describe(reply: reply))")
                }
                input.removeFirst(length)
                step = .open
                if case .send = action { return action }
                return .tunnelOpen(leftover: input)
            case .open:
                return .tunnelOpen(leftover: input)
            }
            // A request was just produced: the proxy answers it in a later read (an
            // answer already here would be out of turn; it stays buffered).
            if case .send = action { return action }
        }
    }

    private var connectRequest: [UInt8] {
        var request: [UInt8] = [0x05, 0x01, 0x00]
        switch destination {
        case .address(let bytes):
            request.append(bytes.count == 4 ? 0x01 : 0x04)
            request += bytes
        case .hostName(let name):
            let bytes = Array(name.utf8.prefix(255))
            request.append(0x03)
            request.append(UInt8(bytes.count))
            request += bytes
        }
        request += [UInt8(port >> 8), UInt8(port & 0xFF)]
        return request
    }

    private var authenticationRequest: [UInt8] {
        guard let credentials else { return [] }
        let user = Array(credentials.user.utf8.prefix(255))
        let password = Array(credentials.password.utf8.prefix(255))
        return [0x01, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    private var destinationDescription: String {
        switch destination {
        case .hostName(let name): return "\(name):\(port)"
        case .address(let bytes) where bytes.count == 4:
            return bytes.map(String.init).joined(separator: ".") + ":\(port)"
        case .address(let bytes):
            let groups = stride(from: 0, to: bytes.count, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return "[\(groups.joined(separator: ":"))]:\(port)"
        }
    }

    private func notSOCKS5() -> ConnectFailure {
        .connectionFailed("the \(proxyName) does not speak SOCKS5 (is it an HTTP proxy? use http://)")
    }

    /// RFC 1928 section 6's reply codes in words.
    package static func describe(reply: UInt8) -> String {
        switch reply {
        case 0x01: "general SOCKS server failure"
        case 0x02: "connection not allowed by ruleset"
        case 0x03: "network unreachable"
        case 0x04: "host unreachable"
        case 0x05: "connection refused"
        case 0x06: "TTL expired"
        case 0x07: "command not supported"
        case 0x08: "address type not supported"
        default: "reply \(reply)"
        }
    }
}
