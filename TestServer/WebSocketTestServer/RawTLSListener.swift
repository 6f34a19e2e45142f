import LibWebSocketsLoop
import CLibWebSockets
import Glibc
import SynchronizationSupport
import WebSocketStreams

/// The raw TLS listener of a TLS ``TestServer``: a second loopback port on which the test
/// server runs TLS itself with OpenSSL, to serve the raw routes over `wss://` and the
/// `/tls/` routes, which break TLS (see ``TLSMisbehaviour``). libwebsockets' own listener
/// cannot serve them: its TLS state lives inside lws, out of reach of a raw route.
///
/// One thread accepts; each connection is served by a thread of its own with blocking I/O
/// (see ``RawTLSPeer``). None of them touches libwebsockets. ``stop()`` shuts the listening
/// socket and every open connection down, which wakes each thread, and returns once every
/// thread has ended and every socket is closed.
final class RawTLSListener: Sendable {
    private struct State {
        var stopping = false
        var listenerClosed = false
        /// Sockets of the connections being served, by connection number. A connection
        /// thread removes its socket here before closing it, so `stop` only ever shuts
        /// down descriptors that are still open and still that connection's.
        var sockets: [Int: Int32] = [:]
        var nextConnection = 1
        /// Threads still running: the accepting one and one per connection.
        var threads = 0
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The port it listens on.
    let port: Int
    private let listeningSocket: Int32
    private let context: TLSServerContext
    private let recorder: ServerRecorder
    private let state = AnnotatedMutex(State())

    private init(port: Int, listeningSocket: Int32, context: TLSServerContext, recorder: ServerRecorder) {
        self.port = port
        self.listeningSocket = listeningSocket
        self.context = context
        self.recorder = recorder
    }

    /// Listens on a free port of `host` with the server certificate of `certificates`, and
    /// starts accepting; connections are recorded in `recorder`.
    static func start(host: String, certificates: TestCertificates, recorder: ServerRecorder) throws(TestServerError) -> RawTLSListener {
        let context = try TLSServerContext(certificates: certificates)
        let (socket, port) = try makeListeningSocket(host: host)
        let listener = RawTLSListener(port: port, listeningSocket: socket, context: context, recorder: recorder)
        listener.state.withLock { $0.threads = 1 }
        guard DetachedThread.run(name: "raw-tls-accept", { listener.acceptLoop() }) else {
            close(socket)
            throw .couldNotListen("could not start the raw TLS listener's thread")
        }
        return listener
    }

    /// Stops accepting, ends every connection (its socket is shut down, so its thread's
    /// next wait returns) and returns once all threads have ended. Safe to call twice.
    func stop() async {
        state.withLock { state in
            guard !state.stopping else { return }
            state.stopping = true
            // Wakes `accept`, which then fails.
            _ = shutdown(listeningSocket, Int32(SHUT_RDWR))
            for socket in state.sockets.values { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = state.withLock { state in
                if state.threads == 0 { return true }
                state.stopWaiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
        // Closed only now: closed while the accepting thread might still use it, the
        // descriptor could be reused by another server's socket.
        let closeListener = state.withLock { state in
            defer { state.listenerClosed = true }
            return !state.listenerClosed
        }
        if closeListener { close(listeningSocket) }
    }

    // MARK: - Threads

    private func acceptLoop() {
        while true {
            let socket = accept(listeningSocket, nil, nil)
            let failure = errno
            // Not inherited by processes tests start (accept4 is not imported into Swift).
            if socket >= 0 { _ = fcntl(socket, F_SETFD, FD_CLOEXEC) }
            if socket < 0 {
                if state.withLock({ $0.stopping }) { break }
                if failure == EINTR || failure == ECONNABORTED { continue }
                // Out of descriptors or memory: back off rather than spin.
                usleep(10_000)
                continue
            }
            let connection: Int? = state.withLock { state in
                guard !state.stopping else { return nil }
                let connection = state.nextConnection
                state.nextConnection += 1
                state.sockets[connection] = socket
                state.threads += 1
                return connection
            }
            guard let connection else {
                close(socket)
                break
            }
            let started = DetachedThread.run(name: "raw-tls-\(connection)") {
                let ending = self.serve(socket)
                self.finish(connection, socket: socket, ending: ending)
            }
            if !started { finish(connection, socket: socket, ending: .close) }
        }
        threadEnded()
    }

    /// Serves one connection to its end. The TLS session is freed when this returns.
    private func serve(_ socket: Int32) -> RawTLSPeer.Ending {
        guard let stream = TLSServerStream(context: context, socket: socket) else { return .close }
        return RawTLSPeer(stream: stream, recorder: recorder).run()
    }

    /// Closes a connection's socket (with a reset when `ending` says so) and ends its thread.
    private func finish(_ connection: Int, socket: Int32, ending: RawTLSPeer.Ending) {
        state.withLock { _ = $0.sockets.removeValue(forKey: connection) }
        if case .reset = ending {
            var option = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(socket, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }
        close(socket)
        threadEnded()
    }

    private func threadEnded() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.threads -= 1
            guard state.threads == 0, state.stopping else { return [] }
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: - Listening socket

    /// A socket listening on a free port of `host` (an address or a name), and that port.
    private static func makeListeningSocket(host: String) throws(TestServerError) -> (socket: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, "0", &hints, &list) == 0, let list else {
            throw .couldNotListen("\(host) (raw TLS listener): the address does not resolve")
        }
        defer { freeaddrinfo(list) }
        var candidate: UnsafeMutablePointer<addrinfo>? = list
        while let info = candidate?.pointee {
            candidate = info.ai_next
            let socket = Glibc.socket(info.ai_family, info.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.ai_protocol)
            guard socket >= 0 else { continue }
            var one: Int32 = 1
            _ = setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            if bind(socket, info.ai_addr, info.ai_addrlen) == 0, listen(socket, 64) == 0, let port = boundPort(socket) {
                return (socket, port)
            }
            close(socket)
        }
        throw .couldNotListen("\(host):0 (raw TLS listener): \(String(cString: strerror(errno)))")
    }

    /// The local port `socket` is bound to.
    private static func boundPort(_ socket: Int32) -> Int? {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { return nil }
        let family = Int32(address.ss_family)
        return withUnsafeBytes(of: &address) { bytes -> Int? in
            switch family {
            case AF_INET: Int(UInt16(bigEndian: bytes.load(as: sockaddr_in.self).sin_port))
            case AF_INET6: Int(UInt16(bigEndian: bytes.load(as: sockaddr_in6.self).sin6_port))
            default: nil
            }
        }
    }
}
