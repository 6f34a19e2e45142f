import BenchmarkKit
import Glibc
import Synchronization

/// `--workload handoff`: the floor under W1 on Swift's default executor, with no WebSocket and
/// no libwebsockets: the primitives ours uses to hand a 32-byte answer from the thread that
/// reads the socket to the task that sends the next request, and nothing else.
///
/// An echo thread stands in for the server (blocking `recv`, then `send`). An I/O thread (a
/// plain pthread, as a loop thread is) blocks in `poll` on the client socket, reads the
/// echo and resumes the task's continuation, as the loop does after a pass. The task (on the
/// default executor unless `--executor loop`, which this workload ignores) sends the next
/// request with `send(2)` on its own thread, as a direct write does, and parks again.
/// `Benchmarks/floor/handoff-floor.c` measures the same shape with a condition variable in
/// place of the continuation (`handoff`) and with one thread (`direct`, raw C's shape): the
/// differences split W1's gap into the kernel's wake-ups, Swift's executor, and our code.
enum HandoffFloor {
    /// What the I/O thread and the task share.
    private final class Handoff: Sendable {
        struct State {
            var delivered = 0
            var waiter: UnsafeContinuation<Void, Never>?
            var waitingFor = 0
        }
        let state = Mutex(State())
        let client: Int32
        let count: Int
        init(client: Int32, count: Int) {
            self.client = client
            self.count = count
        }
    }

    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let count = parameters.count > 0 ? parameters.count : 20_000
        let (client, server) = connectedPair()
        let echoThread = startThread {
            var buffer = [UInt8](repeating: 0, count: 32)
            while readExactly(server, &buffer) { _ = send(server, buffer, 32, 0) }
        }
        let handoff = Handoff(client: client, count: count)
        let ioThread = startThread {
            var ready = pollfd(fd: handoff.client, events: Int16(POLLIN), revents: 0)
            var buffer = [UInt8](repeating: 0, count: 32)
            for _ in 0..<handoff.count {
                while poll(&ready, 1, -1) != 1 {}
                guard readExactly(handoff.client, &buffer) else { break }
                let waiter: UnsafeContinuation<Void, Never>? = handoff.state.withLock { state in
                    state.delivered += 1
                    guard let waiter = state.waiter, state.delivered >= state.waitingFor else { return nil }
                    state.waiter = nil
                    return waiter
                }
                waiter?.resume()
            }
        }
        let request = [UInt8](repeating: UInt8(ascii: "x"), count: 32)
        var roundTrips: [Double] = []
        roundTrips.reserveCapacity(count)
        let clock = ContinuousClock()
        let start = clock.now
        for index in 1...count {
            let sentAt = clock.now
            _ = send(client, request, 32, 0)
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let ready = handoff.state.withLock { state in
                    if state.delivered >= index { return true }
                    state.waiter = continuation
                    state.waitingFor = index
                    return false
                }
                if ready { continuation.resume() }
            }
            roundTrips.append((clock.now - sentAt).microseconds)
        }
        let elapsed = clock.now - start
        shutdown(client, Int32(SHUT_RDWR))
        pthread_join(ioThread, nil)
        pthread_join(echoThread, nil)
        close(client)
        close(server)
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: roundTrips.count == count, count: count, completed: roundTrips.count, elapsed: elapsed)
        let percentiles = Percentiles(roundTrips)
        builder.add("rtt_per_s", Double(roundTrips.count) / elapsed.seconds)
        builder.add("p50_us", percentiles.value(at: 50) ?? 0)
        builder.add("p99_us", percentiles.value(at: 99) ?? 0)
        return builder.report
    }

    /// A connected loopback TCP pair with `TCP_NODELAY` (blocking sockets).
    private static func connectedPair() -> (client: Int32, server: Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                _ = bind(listener, address, length)
                _ = listen(listener, 1)
                _ = getsockname(listener, address, &length)
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = connect(client, $0, length) }
        }
        let server = accept(listener, nil, nil)
        close(listener)
        var one: Int32 = 1
        for fd in [client, server] {
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return (client, server)
    }

    /// Reads exactly `buffer.count` bytes; `false` at the end of the stream.
    private static func readExactly(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var got = 0
        let wanted = buffer.count
        while got < wanted {
            let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, wanted - got, 0) }
            if read <= 0 { return false }
            got += read
        }
        return true
    }

    /// A closure for a pthread to run.
    private final class ThreadBody {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts a pthread running `body`.
    private static func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        pthread_create(&thread, nil, { pointer in
            Unmanaged<ThreadBody>.fromOpaque(pointer!).takeRetainedValue().run()
            return nil
        }, box)
        return thread
    }
}
