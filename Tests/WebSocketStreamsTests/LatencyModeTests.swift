import FoundationEssentials
import Synchronization
import Testing
@testable import LibWebSocketsLoop
@testable import WebSocketStreams
import WebSocketTestServer

/// `WebSocketEventLoop.Configuration`: the latency mode polls before it sleeps, only when asked.
/// Nothing here asserts a duration: the tests check what is configured and that a loop in
/// latency mode behaves like any other.
@Suite("A loop in latency mode")
struct LatencyModeTests {
    @Test("the default polls not at all: loops, groups, the shared loop and connections")
    func defaultPollsNotAtAll() async throws {
        #expect(WebSocketEventLoop.Configuration().busyPollDuration == .zero)
        #expect(!WebSocketEventLoop.Configuration.default.isLatencyMode)
        #expect(WebSocketEventLoop.shared.configuration == .default)
        #expect(WebSocketEventLoop.shared.thread.busyPollNanoseconds == 0)
        let loop = WebSocketEventLoop(name: "latency-default")
        #expect(loop.configuration == .default)
        #expect(loop.thread.busyPollNanoseconds == 0)
        for member in WebSocketEventLoopGroup(loopCount: 2).loops {
            #expect(member.thread.busyPollNanoseconds == 0)
        }
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            #expect(connection.connection.consumerPollNanoseconds == 0)
            try await connection.send(.text("hello"))
            var messages = connection.messages.makeAsyncIterator()
            #expect(await messages.next() == .text("hello"))
            // Nothing was counted for polling consumers on a default loop.
            let generation = connection.connection.receivedGeneration.load(ordering: .relaxed)
            #expect(generation == 0)
            #expect(!loop.thread.isBusyPolling)
            await connection.close()
        }
        await loop.shutdown()
    }

    @Test("the budget reaches the loop thread, every loop of a group and its connections")
    func budgetIsConfigured() async throws {
        #expect(WebSocketEventLoop.Configuration.lowLatency().busyPollDuration == .microseconds(100))
        #expect(WebSocketEventLoop.Configuration.lowLatency(busyPolling: .microseconds(30)).isLatencyMode)
        #expect(WebSocketEventLoop.Configuration(busyPollDuration: .microseconds(-5)).busyPollDuration == .zero)
        #expect(WebSocketEventLoop.Configuration(busyPollDuration: .seconds(5)).busyPollDuration == .seconds(1))
        let group = WebSocketEventLoopGroup(loopCount: 2, name: "latency-group", configuration: .lowLatency(busyPolling: .microseconds(40)))
        for loop in group.loops {
            #expect(loop.configuration.busyPollDuration == .microseconds(40))
            #expect(loop.thread.busyPollNanoseconds == 40_000)
        }
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: group.loops[0])
            #expect(connection.connection.consumerPollNanoseconds == 40_000)
            await connection.close()
        }
        await group.shutdown()
    }

    @Test("echoes, receive(), pings and the close handshake, from the default executor")
    func deliversAndClosesOnTheDefaultExecutor() async throws {
        let loop = WebSocketEventLoop(name: "latency-echo", configuration: .lowLatency())
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            var messages = connection.messages.makeAsyncIterator()
            for index in 0..<300 {
                try await connection.send(.text("message \(index)"))
                #expect(await messages.next() == .text("message \(index)"))
            }
            // Off the loop: the loop resumes this task as it reads the reply, not after its pass.
            let waitsOnLoop = connection.connection.consumerWaitsOnLoop.load(ordering: .relaxed)
            #expect(!waitsOnLoop)
            // A burst: several messages queued at once, then read back in order.
            for index in 0..<50 { try await connection.send(.binary(Data([UInt8(index)]))) }
            for index in 0..<50 { #expect(await messages.next() == .binary(Data([UInt8(index)]))) }
            _ = try await connection.ping()
            await connection.close()
            #expect(connection.closeCode == .normalClosure)
            #expect(await messages.next() == nil)

            let second = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            try await second.send(.text("one at a time"))
            #expect(try await second.receive() == .text("one at a time"))
            await second.close()
            #expect(second.closeCode == .normalClosure)
        }
        await loop.shutdown()
        #expect(loop.thread.spinningPasses == 0)
    }

    @Test("echoes and the close handshake from a task on the loop itself")
    func deliversAndClosesOnTheLoopExecutor() async throws {
        let loop = WebSocketEventLoop(name: "latency-exec", configuration: .lowLatency(busyPolling: .microseconds(50)))
        try await withTestServer { server in
            try await withTaskExecutorPreference(loop) {
                let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
                var messages = connection.messages.makeAsyncIterator()
                for index in 0..<300 {
                    try await connection.send(.text("message \(index)"))
                    #expect(await messages.next() == .text("message \(index)"))
                }
                // On the loop: its replies are handed over after the pass, as the task's jobs run.
                let waitsOnLoop = connection.connection.consumerWaitsOnLoop.load(ordering: .relaxed)
                #expect(waitsOnLoop)
                await connection.close()
                #expect(connection.closeCode == .normalClosure)
            }
        }
        await loop.shutdown()
    }

    @Test("a loop in latency mode stops polling once its connection is idle, and a message wakes it")
    func idleLoopSleeps() async throws {
        let loop = WebSocketEventLoop(name: "latency-idle", configuration: .lowLatency(busyPolling: .microseconds(200)))
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            var messages = connection.messages.makeAsyncIterator()
            try await connection.send(.text("before"))
            #expect(await messages.next() == .text("before"))
            // Polling lasts 200 µs after the last thing the loop did; then it waits in the kernel.
            await eventually("the idle loop to stop polling") { !loop.thread.isBusyPolling }
            #expect(!loop.thread.isBusyPolling, "the idle loop never stopped polling")
            // Asleep, a send from another thread still wakes it (the eventfd, as in the default mode).
            try await connection.send(.text("after"))
            #expect(await messages.next() == .text("after"))
            await connection.close()
            #expect(connection.closeCode == .normalClosure)
        }
        await loop.shutdown()
    }

    @Test("shutting down a loop in latency mode while it polls closes its connections with 1001")
    func shutdownWhilePolling() async throws {
        let loop = WebSocketEventLoop(name: "latency-shutdown", configuration: .lowLatency(busyPolling: .milliseconds(50)))
        try await withTestServer { server in
            let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
            try await connection.send(.text("keep the loop polling"))
            await loop.shutdown()
            #expect(connection.closeCode == .goingAway)
        }
    }
}
