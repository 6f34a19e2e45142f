import Glibc
import LibWebSocketsLoop
import Synchronization
import SynchronizationSupport

/// Connects to the first of a host's addresses that answers, as RFC 8305 (Happy Eyeballs
/// v2) says: the addresses in an order that alternates the families, IPv6 first; a new
/// attempt whenever the latest has neither connected nor failed after the attempt delay,
/// or at once when one fails; the first socket that connects wins and every other attempt
/// is closed. Runs on a thread of its own, as name resolution does, before the loop adopts
/// the winning socket: a host with one address never comes here.
enum AddressRace {
    /// `addresses` in racing order (RFC 8305 section 4): IPv6 and IPv4 alternated, IPv6
    /// first, each family keeping the resolver's order.
    static func interleave(_ addresses: [String]) -> [String] {
        let ipv6 = addresses.filter { $0.contains(":") }
        let ipv4 = addresses.filter { !$0.contains(":") }
        var ordered: [String] = []
        for index in 0..<max(ipv6.count, ipv4.count) {
            if index < ipv6.count { ordered.append(ipv6[index]) }
            if index < ipv4.count { ordered.append(ipv4[index]) }
        }
        return ordered
    }

    /// Races `addresses` (already in order) on `port` until one connects, all fail or
    /// `deadline` passes. Throws ``WebSocketError/connectionFailed(_:)`` naming every address
    /// and why it failed, ``WebSocketError/timedOut`` at the deadline, or `CancellationError`.
    static func race(
        host: String, addresses: [String], port: Int, options: SocketConnector.Options, attemptDelay: Duration,
        deadline: ContinuousClock.Instant
    ) async throws -> ConnectedSocket {
        let cancelled = CancelFlag()
        let outcome = AnnotatedMutex<Outcome>(.waiting(nil))
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<ConnectedSocket, any Error>) in
                outcome.withLock { $0 = .waiting(continuation) }
                let started = DetachedThread.run(name: "ws-connect") {
                    let result = Self.run(
                        host: host, addresses: addresses, port: port, options: options,
                        attemptDelay: attemptDelay, deadline: deadline, cancelled: cancelled)
                    let waiter: UnsafeContinuation<ConnectedSocket, any Error>? = outcome.withLock { state in
                        defer { state = .done }
                        if case .waiting(let waiter) = state { return waiter }
                        return nil
                    }
                    waiter?.resume(with: result)
                }
                if !started {
                    let waiter: UnsafeContinuation<ConnectedSocket, any Error>? = outcome.withLock { state in
                        defer { state = .done }
                        if case .waiting(let waiter) = state { return waiter }
                        return nil
                    }
                    waiter?.resume(throwing: WebSocketError.connectionFailed("could not start a thread to connect to '\(host)'"))
                }
            }
        } onCancel: {
            cancelled.set()
        }
    }

    private enum Outcome {
        case waiting(UnsafeContinuation<ConnectedSocket, any Error>?)
        case done
    }

    /// Set when the connecting task is cancelled; the race looks at least every 50 ms.
    private final class CancelFlag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .relaxed) }
        var isSet: Bool { value.load(ordering: .relaxed) }
    }

    /// One attempt in flight.
    private struct Attempt {
        var descriptor: Int32
        var address: String
    }

    /// The race itself, blocking (on its own thread).
    private static func run(
        host: String, addresses: [String], port: Int, options: SocketConnector.Options, attemptDelay: Duration,
        deadline: ContinuousClock.Instant, cancelled: CancelFlag
    ) -> Result<ConnectedSocket, any Error> {
        let started = ContinuousClock.now
        var attempts: [Attempt] = []
        var failures: [String] = []
        var next = 0
        var nextStart = ContinuousClock.now
        func closeAll() {
            for attempt in attempts { close(attempt.descriptor) }
            attempts = []
        }
        while true {
            let now = ContinuousClock.now
            if cancelled.isSet {
                closeAll()
                return .failure(CancellationError())
            }
            if now >= deadline {
                failures += attempts.map { "\(SocketConnector.Endpoint.tcp(address: $0.address, port: port)): no answer" }
                closeAll()
                return .failure(WebSocketError(
                    code: .timedOut, reason: "connecting to \(host) (\(failures.joined(separator: "; ")))"))
            }
            // Start the next attempt when it is due, or at once when none is in flight.
            if next < addresses.count, now >= nextStart || attempts.isEmpty {
                let address = addresses[next]
                next += 1
                do {
                    let attempt = try SocketConnector.start(.tcp(address: address, port: port), options: options)
                    if !attempt.inProgress {
                        closeAll()
                        return .success(ConnectedSocket(
                            descriptor: attempt.descriptor, address: address, port: port, attempts: next,
                            connectDuration: .now - started))
                    }
                    attempts.append(Attempt(descriptor: attempt.descriptor, address: address))
                    nextStart = now + attemptDelay
                } catch {
                    failures.append(error.reason ?? "\(error)")
                    nextStart = now
                }
                continue
            }
            if attempts.isEmpty {
                return .failure(WebSocketError.connectionFailed(
                    "could not connect to any address of \(host): \(failures.joined(separator: "; "))"))
            }
            var wake = min(deadline, now + .milliseconds(50))
            if next < addresses.count { wake = min(wake, nextStart) }
            var polls = attempts.map { pollfd(fd: $0.descriptor, events: Int16(POLLOUT), revents: 0) }
            let wait = (wake - now).components
            let timeout = max(1, Int32(clamping: wait.seconds * 1000 + wait.attoseconds / 1_000_000_000_000_000))
            let ready = poll(&polls, nfds_t(polls.count), timeout)
            guard ready > 0 else { continue }
            var still: [Attempt] = []
            for (index, attempt) in attempts.enumerated() {
                guard polls[index].revents != 0 else {
                    still.append(attempt)
                    continue
                }
                if let reason = SocketConnector.pendingError(attempt.descriptor) {
                    close(attempt.descriptor)
                    failures.append("\(reason) (\(SocketConnector.Endpoint.tcp(address: attempt.address, port: port)))")
                    nextStart = ContinuousClock.now  // a failure starts the next attempt at once
                    continue
                }
                // Connected: the winner. Every other attempt is closed.
                for other in attempts where other.descriptor != attempt.descriptor { close(other.descriptor) }
                attempts = []
                return .success(ConnectedSocket(
                    descriptor: attempt.descriptor, address: attempt.address, port: port, attempts: next,
                    connectDuration: .now - started))
            }
            attempts = still
        }
    }
}

/// A socket the address race connected, waiting for the loop to adopt it. Whoever takes
/// the descriptor owns it; one never taken (the connect was cancelled first) is closed
/// when this goes away.
final class ConnectedSocket: Sendable, Hashable, CustomStringConvertible {
    let address: String
    let port: Int
    /// How many connection attempts the race started, the winner's included.
    let attempts: Int
    /// From the first attempt's start to the winner's connect.
    let connectDuration: Duration
    private let descriptor: Atomic<Int32>

    init(descriptor: Int32, address: String, port: Int, attempts: Int, connectDuration: Duration) {
        self.descriptor = Atomic(descriptor)
        self.address = address
        self.port = port
        self.attempts = attempts
        self.connectDuration = connectDuration
    }

    /// The descriptor, once; `nil` after.
    func take() -> Int32? {
        let taken = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        return taken >= 0 ? taken : nil
    }

    var description: String { SocketConnector.Endpoint.tcp(address: address, port: port).description }

    deinit {
        if let descriptor = take() { close(descriptor) }
    }

    static func == (lhs: ConnectedSocket, rhs: ConnectedSocket) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
