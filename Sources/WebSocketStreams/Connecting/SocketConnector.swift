import CLibWebSockets
import Glibc

/// Opens the client's socket and starts its connect, without blocking, before the socket
/// is handed to libwebsockets (`lws_adopt_descriptor_vhost_via_info`).
///
/// Connecting here rather than through `lws_client_connect_via_info` gives two things lws
/// 4.1.6 does not: the reason a connect failed (lws reports every failure as "Unable to
/// connect", having consumed the socket's error), and Unix domain sockets.
enum SocketConnector {
    /// Where a socket connects.
    enum Endpoint: Sendable, Hashable, CustomStringConvertible {
        /// A numeric IPv4 or IPv6 address and a TCP port.
        case tcp(address: String, port: Int)
        /// A Unix domain socket's path.
        case unix(path: String)
        /// A socket already connected (by ``AddressRace``), for the loop to adopt.
        case connected(ConnectedSocket)

        var description: String {
            switch self {
            case .tcp(let address, let port): address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
            case .unix(let path): "unix socket \(path)"
            case .connected(let socket): socket.description
            }
        }
    }

    /// How a TCP socket is set up before it connects: its source address and the kernel's
    /// liveness checks (``WebSocketConfiguration/localAddress``,
    /// ``WebSocketConfiguration/tcpKeepalive``, ``WebSocketConfiguration/tcpUserTimeout``).
    struct Options: Sendable {
        var localAddress: String?
        var keepalive: Duration?
        var userTimeout: Duration?

        init(localAddress: String? = nil, keepalive: Duration? = nil, userTimeout: Duration? = nil) {
            self.localAddress = localAddress
            self.keepalive = keepalive
            self.userTimeout = userTimeout
        }

        init(_ configuration: WebSocketConfiguration) {
            self.init(
                localAddress: configuration.localAddress, keepalive: configuration.tcpKeepalive,
                userTimeout: configuration.tcpUserTimeout)
        }
    }

    /// A connect under way or done.
    struct Started {
        /// The non-blocking socket; the caller owns it.
        var descriptor: Int32
        /// `false` when the connect finished at once (as Unix sockets do); `true` when it
        /// finishes later: the socket becomes writable, and ``pendingError(_:)`` tells how.
        var inProgress: Bool
    }

    /// Creates a non-blocking socket for `endpoint`, bound to `localAddress` when one is
    /// given, and starts connecting it. Throws the failure in words when it fails at once
    /// (no socket is left open then).
    static func start(_ endpoint: Endpoint, options: Options = Options()) throws(WebSocketError) -> Started {
        let localAddress = options.localAddress
        switch endpoint {
        case .tcp(let address, let port):
            guard let bytes = addressBytes(address) else { throw .connectionFailed("'\(address)' is not a numeric address") }
            let isIPv4 = bytes.count == 4
            var local: (storage: sockaddr_storage, length: socklen_t)?
            if let localAddress {
                guard let localBytes = addressBytes(localAddress) else {
                    throw .connectionFailed("localAddress '\(localAddress)' is not a numeric address")
                }
                guard localBytes.count == bytes.count else {
                    throw .connectionFailed(
                        "localAddress \(localAddress) is IPv\(localBytes.count == 4 ? 4 : 6); it cannot reach \(endpoint)")
                }
                local = socketAddress(localBytes, port: 0)
            }
            var (storage, length) = socketAddress(bytes, port: port)
            let descriptor = try makeSocket(family: isIPv4 ? AF_INET : AF_INET6, endpoint: endpoint)
            var noDelay: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            applyLiveness(options, to: descriptor)
            if var local, let localAddress {
                // The port is chosen at connect, for the whole 4-tuple: many connections from
                // one source address to different servers do not each use up a port.
                var noPort: Int32 = 1
                _ = setsockopt(descriptor, Int32(IPPROTO_IP), ipBindAddressNoPort, &noPort, socklen_t(MemoryLayout<Int32>.size))
                let bound = withUnsafePointer(to: &local.storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, local.length) }
                }
                guard bound == 0 else {
                    let code = errno
                    close(descriptor)
                    throw .connectionFailed("could not bind to localAddress \(localAddress): \(describe(code))")
                }
            }
            return try connect(descriptor, &storage, length, endpoint: endpoint)
        case .connected(let socket):
            guard let descriptor = socket.take() else { throw .connectionFailed("the socket to \(socket) was already used") }
            return Started(descriptor: descriptor, inProgress: false)
        case .unix(let path):
            var storage = sockaddr_storage()
            var length = socklen_t(0)
            let fits = withUnsafeMutableBytes(of: &storage) { raw -> Bool in
                let sun = raw.baseAddress!.assumingMemoryBound(to: sockaddr_un.self)
                sun.pointee.sun_family = sa_family_t(AF_UNIX)
                let capacity = MemoryLayout.size(ofValue: sun.pointee.sun_path)
                let bytes = Array(path.utf8)
                guard bytes.count < capacity else { return false }
                withUnsafeMutableBytes(of: &sun.pointee.sun_path) { pathBytes in
                    pathBytes.copyBytes(from: bytes)
                    pathBytes[bytes.count] = 0
                }
                length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
                return true
            }
            guard fits else { throw .invalidURL("the Unix socket path '\(path)' is too long") }
            let descriptor = try makeSocket(family: AF_UNIX, endpoint: endpoint)
            return try connect(descriptor, &storage, length, endpoint: endpoint)
        }
    }

    /// The outcome of a connect that was in progress, once the socket is writable or has
    /// hung up: `nil` when it connected, else the failure in words. Reading it clears it.
    static func pendingError(_ descriptor: Int32) -> String? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return describe(errno) }
        return code == 0 ? nil : describe(code)
    }

    /// The bytes of a numeric IPv4 (4) or IPv6 (16) address; `nil` for anything else.
    static func addressBytes(_ numeric: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, numeric, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, numeric, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Sets TCP keep-alive (`SO_KEEPALIVE`, `TCP_KEEPIDLE`, `TCP_KEEPINTVL`, `TCP_KEEPCNT`)
    /// and `TCP_USER_TIMEOUT` as `options` ask.
    private static func applyLiveness(_ options: Options, to descriptor: Int32) {
        let size = socklen_t(MemoryLayout<Int32>.size)
        if let keepalive = options.keepalive {
            let idle = Int32(clamping: max(1, keepalive.components.seconds))
            var on: Int32 = 1
            var idleSeconds = idle
            var interval = max(1, idle / 3)
            var count: Int32 = 3
            _ = setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &on, size)
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idleSeconds, size)
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, size)
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_KEEPCNT, &count, size)
        }
        if let userTimeout = options.userTimeout {
            var milliseconds = UInt32(clamping: userTimeout.components.seconds * 1000
                + userTimeout.components.attoseconds / 1_000_000_000_000_000)
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), tcpUserTimeoutOption, &milliseconds, socklen_t(MemoryLayout<UInt32>.size))
        }
    }

    /// Linux's `TCP_USER_TIMEOUT` (since 2.6.37).
    private static let tcpUserTimeoutOption: Int32 = 18

    /// Linux's `IP_BIND_ADDRESS_NO_PORT` (since 4.2; Glibc's headers may lack it).
    private static let ipBindAddressNoPort: Int32 = 24

    /// The `sockaddr_in` or `sockaddr_in6` for an address's bytes (4 or 16) and `port`.
    private static func socketAddress(_ bytes: [UInt8], port: Int) -> (sockaddr_storage, socklen_t) {
        let isIPv4 = bytes.count == 4
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            if isIPv4 {
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
                withUnsafeMutableBytes(of: &sin.pointee.sin_addr) { $0.copyBytes(from: bytes) }
            } else {
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                withUnsafeMutableBytes(of: &sin6.pointee.sin6_addr) { $0.copyBytes(from: bytes) }
            }
        }
        return (storage, socklen_t(isIPv4 ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size))
    }

    /// `errno` as users say it: "connection refused", not "Connection refused".
    static func describe(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        guard let first = text.first else { return "error \(code)" }
        return first.lowercased() + text.dropFirst()
    }

    private static func makeSocket(family: Int32, endpoint: Endpoint) throws(WebSocketError) -> Int32 {
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw .connectionFailed("could not create a socket for \(endpoint): \(describe(errno))")
        }
        return descriptor
    }

    private static func connect(
        _ descriptor: Int32, _ storage: inout sockaddr_storage, _ length: socklen_t, endpoint: Endpoint
    ) throws(WebSocketError) -> Started {
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, length) }
            }
        } while result != 0 && errno == EINTR
        if result == 0 { return Started(descriptor: descriptor, inProgress: false) }
        let code = errno
        if code == EINPROGRESS { return Started(descriptor: descriptor, inProgress: true) }
        close(descriptor)
        if code == ENOENT, case .unix = endpoint {
            throw .connectionFailed("\(endpoint) does not exist")
        }
        if code == EAGAIN, case .unix = endpoint {
            throw .connectionFailed("\(endpoint) is not accepting connections (its backlog is full)")
        }
        throw .connectionFailed("\(describe(code)) (\(endpoint))")
    }
}
