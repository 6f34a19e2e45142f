import LibWebSocketsLoop
import FoundationEssentials
import Glibc
import Synchronization
import SynchronizationSupport
@testable import WebSocketStreams

/// A minimal HTTP CONNECT proxy on a free loopback port, for proxy tests: it records
/// every CONNECT request line, answers 200 (or 407 when it requires credentials the
/// request lacks), and pumps bytes both ways on threads of its own (blocking I/O on
/// Dispatch or cooperative workers would starve the tests' tasks).
final class TestConnectProxy: Sendable {
    let port: Int
    /// `user:password` the proxy requires as Basic `Proxy-Authorization`, if any.
    let requiredCredentials: String?
    private let listener: Int32
    private let requests = AnnotatedMutex<[String]>([])
    private let stopped = Atomic<Bool>(false)

    /// The CONNECT request lines seen so far, e.g. `CONNECT 127.0.0.1:4567 HTTP/1.1`.
    var connectRequests: [String] { requests.withLock { $0 } }

    init(requiredCredentials: String? = nil) throws {
        self.requiredCredentials = requiredCredentials
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw ProxyError.setup(errno) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        DetachedThread.run(name: "test-proxy") { [self] in
            while !stopped.load(ordering: .relaxed) {
                let client = accept(listener, nil, nil)
                if client < 0 { break }
                DetachedThread.run(name: "test-proxy-conn") { self.serve(client) }
            }
            // Closed here, not in `stop`: a descriptor closed while this thread may still
            // call `accept` on it can be reused by a parallel test's listening socket, and
            // this proxy would then steal that test's connections.
            close(listener)
        }
    }

    enum ProxyError: Error { case setup(Int32) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        // Wakes the accept loop (accept fails on a shut-down listener), which closes it.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve(_ client: Int32) {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]), head.count < 8192 {
            guard read(client, &byte, 1) == 1 else { close(client); return }
            head.append(byte)
        }
        let text = String(decoding: head, as: UTF8.self)
        // "\r\n" is one Character in Swift, so split on it as a whole.
        let requestLine = String(text.split(separator: "\r\n").first ?? "")
        requests.withLock { $0.append(requestLine) }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[0] == "CONNECT", let colon = parts[1].lastIndex(of: ":"),
              let port = UInt16(parts[1][parts[1].index(after: colon)...]) else {
            reply(client, "HTTP/1.1 400 Bad Request\r\n\r\n")
            close(client)
            return
        }
        if let requiredCredentials {
            let expected = "proxy-authorization: basic " + Data(requiredCredentials.utf8).base64EncodedString().lowercased()
            guard text.lowercased().contains(expected) else {
                reply(client, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n"
                    + "Content-Length: 0\r\n\r\n")
                close(client)
                return
            }
        }
        let host = String(parts[1][..<colon])
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host == "localhost" ? "127.0.0.1" : host)
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            reply(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
            close(client)
            close(upstream)
            return
        }
        reply(client, "HTTP/1.1 200 Connection established\r\n\r\n")
        let pumpsLeft = Atomic<Int>(2)
        for (from, to) in [(client, upstream), (upstream, client)] {
            DetachedThread.run(name: "test-proxy-pump") {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = read(from, &buffer, buffer.count)
                    if count <= 0 { break }
                    var sent = 0
                    while sent < count {
                        let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, count - sent) }
                        if written <= 0 { break }
                        sent += written
                    }
                }
                shutdown(to, Int32(SHUT_WR))
                if pumpsLeft.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                    close(client)
                    close(upstream)
                }
            }
        }
    }

    private func reply(_ socket: Int32, _ text: String) {
        var text = text
        text.withUTF8 { _ = write(socket, $0.baseAddress, $0.count) }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
