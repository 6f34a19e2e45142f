import FoundationEssentials
import Glibc
import Testing
@testable import WebSocketStreams
import WebSocketTestServer

/// A listener on `address:port` that never accepts, its accept queue filled: further
/// connection attempts get no answer at all (their SYNs are dropped), like a blackholed
/// address.
private final class Blackhole {
    private var descriptors: [Int32] = []

    init?(address: String, port: Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { return nil }
        descriptors.append(listener)
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = Self.socketAddress(address, port)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 0) == 0 else { return nil }
        // Fill the accept queue (backlog 0 holds one; a second waits half-open).
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            descriptors.append(filler)
            _ = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    /// Whether a new connection attempt stays unanswered for `milliseconds`.
    func dropsAttempts(address: String, port: Int, milliseconds: Int32 = 300) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        defer { close(probe) }
        var socketAddress = Self.socketAddress(address, port)
        _ = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var polled = pollfd(fd: probe, events: Int16(POLLOUT), revents: 0)
        return poll(&polled, 1, milliseconds) == 0
    }

    private static func socketAddress(_ address: String, _ port: Int) -> sockaddr_in {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, address, &socketAddress.sin_addr)
        return socketAddress
    }

    deinit {
        for descriptor in descriptors { close(descriptor) }
    }
}

@Suite("Every address of a host, raced (RFC 8305 Happy Eyeballs), on loopback")
struct HappyEyeballsTests {
    private func configuration(_ addresses: [String], delay: Duration) -> WebSocketConfiguration {
        var configuration = WebSocketConfiguration()
        configuration.resolver = WebSocketResolver { host in host == "eyeballs.test" ? addresses : [] }
        configuration.connectionAttemptDelay = delay
        configuration.connectTimeout = .seconds(5)
        return configuration
    }

    @Test("IPv6 and IPv4 addresses are alternated, IPv6 first, each family in the resolver's order")
    func ordering() {
        #expect(AddressRace.interleave(["10.0.0.1", "10.0.0.2", "::1", "fe80::2", "10.0.0.3"])
            == ["::1", "10.0.0.1", "fe80::2", "10.0.0.2", "10.0.0.3"])
        #expect(AddressRace.interleave(["10.0.0.1"]) == ["10.0.0.1"])
    }

    @Test("a first address that refuses moves on at once, long before the attempt delay")
    func refusedFirst() async throws {
        try await withTestServer { server in
            // 127.0.0.2 listens on nothing here: it refuses at once.
            let configuration = configuration(["127.0.0.2", "127.0.0.1"], delay: .seconds(30))
            let started = ContinuousClock.now
            let connection = try await WebSocket.connect(
                to: "ws://eyeballs.test:\(server.port)/echo", configuration: configuration)
            #expect(ContinuousClock.now - started < .seconds(5), "it waited for the 30 s attempt delay")
            try await connection.send(.text("second address"))
            var replies = connection.messages.makeAsyncIterator()
            #expect(await replies.next() == .text("second address"))
            await connection.close()
        }
    }

    @Test("a first address that never answers is raced: the second connects after the attempt delay")
    func blackholedFirst() async throws {
        try await withTestServer { server in
            guard let blackhole = Blackhole(address: "127.0.0.3", port: server.port),
                  blackhole.dropsAttempts(address: "127.0.0.3", port: server.port)
            else {
                Issue.record("could not make a blackholed listener on 127.0.0.3:\(server.port)")
                return
            }
            let configuration = configuration(["127.0.0.3", "127.0.0.1"], delay: .milliseconds(200))
            let started = ContinuousClock.now
            let connection = try await WebSocket.connect(
                to: "ws://eyeballs.test:\(server.port)/echo", configuration: configuration)
            let took = ContinuousClock.now - started
            #expect(took >= .milliseconds(190), "the second attempt started before the delay (\(took))")
            #expect(took < .seconds(4), "the race did not move on (\(took))")
            #expect(connection.isOpen)
            await connection.close()
            withExtendedLifetime(blackhole) {}
        }
    }

    @Test("when every address fails, one error names each address and why")
    func allFail() async throws {
        let configuration = configuration(["127.0.0.2", "127.0.0.4"], delay: .milliseconds(100))
        let error = await expectWebSocketError {
            _ = try await WebSocket.connect(to: "ws://eyeballs.test:9/", configuration: configuration)
        }
        guard let reason = reason(of: error, ifCode: .connectionFailed) else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("eyeballs.test"), "reason: \(reason)")
        #expect(reason.contains("127.0.0.2:9") && reason.contains("127.0.0.4:9"), "reason: \(reason)")
        #expect(reason.contains("refused"), "reason: \(reason)")
    }

    @Test("a resolver that finds nothing, or gives a name, fails with words that say so")
    func badResolver() async throws {
        var empty = configuration([], delay: .milliseconds(100))
        var error = await expectWebSocketError {
            _ = try await WebSocket.connect(to: "ws://eyeballs.test:9/", configuration: empty)
        }
        #expect(reason(of: error, ifCode: .connectionFailed)?.contains("no address") == true)
        empty.resolver = WebSocketResolver { _ in ["not-an-address"] }
        error = await expectWebSocketError {
            _ = try await WebSocket.connect(to: "ws://eyeballs.test:9/", configuration: empty)
        }
        #expect(reason(of: error, ifCode: .connectionFailed)?.contains("not a numeric address") == true)
    }
}
