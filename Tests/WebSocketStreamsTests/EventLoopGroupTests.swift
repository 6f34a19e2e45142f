import Testing
@testable import WebSocketStreams
import WebSocketTestServer

@Suite("WebSocketEventLoopGroup: connections spread over loops, against the test server")
struct EventLoopGroupTests {
    @Test("next() spreads connections evenly; each works; shutdown closes all with 1001 and refuses more")
    func spreadAndShutdown() async throws {
        try await withTestServer { server in
            let group = WebSocketEventLoopGroup(loopCount: 2, name: "group-test")
            var connections: [WebSocket] = []
            for index in 0..<6 {
                let connection = try await WebSocket.connect(to: server.url(), eventLoop: group.next())
                try await connection.send(.text("\(index)"))
                var replies = connection.messages.makeAsyncIterator()
                #expect(await replies.next() == .text("\(index)"))
                connections.append(connection)
            }
            #expect(group.connectionCounts == [3, 3])
            await group.shutdown()
            let seen = try await server.waitUntil { $0.closeCodes.count == 6 }
            #expect(seen.closeCodes.allSatisfy { $0 == .goingAway })
            #expect(connections.allSatisfy { !$0.isOpen })
            let refused = await expectWebSocketError { _ = try await WebSocket.connect(to: server.url(), eventLoop: group.next()) }
            #expect(reason(of: refused, ifCode: .connectionFailed)?.contains("shut down") == true)
            connections.removeAll()
            #expect(group.connectionCounts == [0, 0])
        }
    }

    @Test("a burst of connects before any is open is spread over every loop")
    func burstIsSpread() async throws {
        try await withTestServer { server in
            let group = WebSocketEventLoopGroup(loopCount: 2, name: "burst-test")
            let connections = try await withThrowingTaskGroup(of: WebSocket.self) { tasks in
                for _ in 0..<8 { tasks.addTask { try await WebSocket.connect(to: server.url(), eventLoop: group.next()) } }
                return try await tasks.reduce(into: [WebSocket]()) { $0.append($1) }
            }
            #expect(group.connectionCounts.allSatisfy { $0 >= 3 }, "\(group.connectionCounts)")
            #expect(connections.count == 8)
            await group.shutdown()
        }
    }

    @Test("a task that prefers one of the group's loops gets that loop")
    func executorPreferenceWins() async {
        let group = WebSocketEventLoopGroup(loopCount: 2, name: "prefer-test")
        let second = group.loops[1]
        let chosen = await withTaskExecutorPreference(second) { group.next() }
        #expect(chosen === second)
        await group.shutdown()
    }

    @Test("the shared group has one loop per available core, WebSocketEventLoop.shared first")
    func sharedGroup() {
        let shared = WebSocketEventLoopGroup.shared
        #expect(shared.loops.count == WebSocketEventLoopGroup.defaultLoopCount)
        #expect(shared.loops.first === WebSocketEventLoop.shared)
        #expect(WebSocketEventLoopGroup.defaultLoopCount >= 1)
    }

    @Test("a reconnecting socket keeps its loop unless it is overloaded")
    func keepingALoop() async throws {
        try await withTestServer { server in
            let group = WebSocketEventLoopGroup(loopCount: 2, name: "keep-test")
            let first = group.loops[0]
            #expect(group.keeping(first) === first)
            var held: [WebSocket] = []
            for _ in 0..<12 { held.append(try await WebSocket.connect(to: server.url(), eventLoop: first)) }
            #expect(group.keeping(first) === group.loops[1])
            #expect(group.keeping(group.loops[1]) === group.loops[1])
            held.removeAll()
            await group.shutdown()
        }
    }
}
