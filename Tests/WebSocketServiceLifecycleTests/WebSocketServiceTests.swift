import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
import WebSocketServiceLifecycle
import WebSocketStreams
import WebSocketTestServer

@Suite("WebSocketService in a ServiceGroup", .timeLimit(.minutes(1)))
struct WebSocketServiceTests {
    /// An error a handler throws.
    struct HandlerFailure: Error {}

    @Test func gracefulShutdownClosesWithGoingAwayAndRunReturns() async throws {
        try await TestServer.withServer { server in
            let received = Events<WebSocketMessage>()
            let service = WebSocketService(
                to: server.url(path: "/echo"),
                onConnect: { connection in try await connection.send(.text("hello")) }
            ) { socket in
                for await message in socket.messages { received.send(message) }
                received.finish()
            }
            let group = ServiceGroup(services: [service], logger: .quiet)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                #expect(await received.next() == .text("hello"))

                await group.triggerGracefulShutdown()
                try await tasks.next()  // the group, so the service's run(), returned without an error
                #expect(await received.next() == nil)  // the handler's loop ended
            }
            #expect(service.socket.state == .completed)
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    @Test func gracefulShutdownLetsABusyHandlerFinish() async throws {
        try await TestServer.withServer { server in
            let handling = Events<Void>()
            let release = Events<Void>()
            let finishedUncancelled = Events<Bool>()
            let service = WebSocketService(
                to: server.url(path: "/echo"),
                onConnect: { connection in try await connection.send(.text("work")) }
            ) { socket in
                for await _ in socket.messages {
                    handling.send(())
                    _ = await release.next()
                    finishedUncancelled.send(!Task.isCancelled)
                }
            }
            try await testGracefulShutdown { trigger in
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    tasks.addTask { try await service.run() }
                    _ = await handling.next()

                    trigger.triggerGracefulShutdown()
                    // The socket closes while the handler is still busy with its message.
                    try await server.waitUntil { $0.closeCodes == [.goingAway] }
                    release.send(())
                    #expect(await finishedUncancelled.next() == true)
                    try await tasks.next()
                }
            }
        }
    }

    /// Runs `service` until `connected` reports a connection, then cancels it and waits for
    /// `run()` to return; an error it throws fails the test.
    private func runUntilConnectedThenCancel(_ service: WebSocketService, connected: Events<Void>) async throws {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await service.run() }
            _ = await connected.next()
            tasks.cancelAll()
            try await tasks.next()
        }
    }

    @Test func cancellationEndsRunWithoutAnError() async throws {
        try await TestServer.withServer { server in
            let connected = Events<Void>()
            let service = WebSocketService(
                to: server.url(path: "/echo"),
                onConnect: { _ in connected.send(()) }
            ) { socket in
                for await _ in socket.messages {}
                try Task.checkCancellation()  // a handler's CancellationError is not the service's error
            }
            try await runUntilConnectedThenCancel(service, connected: connected)
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    @Test func cancellationEndsAHandlerThatIsNotReadingMessages() async throws {
        try await TestServer.withServer { server in
            let connected = Events<Void>()
            let service = WebSocketService(
                to: server.url(path: "/echo"),
                onConnect: { _ in connected.send(()) }
            ) { socket in
                // Waits for the socket to end in a task of its own, which cancellation does
                // not reach: only the service's close can end the wait.
                await Task { for await _ in socket.states {} }.value
            }
            try await runUntilConnectedThenCancel(service, connected: connected)
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    @Test func aHandlersErrorClosesWithGoingAwayAndReachesTheGroup() async throws {
        try await TestServer.withServer { server in
            let service = WebSocketService(to: server.url(path: "/echo")) { socket in
                try await socket.send(.text("hello"))  // returns once a connection is open
                throw HandlerFailure()
            }
            let group = ServiceGroup(services: [service], logger: .quiet)
            await #expect(throws: HandlerFailure.self) { try await group.run() }
            try await server.waitUntil { $0.closeCodes == [.goingAway] }
        }
    }

    @Test func aHandlerThatReturnsClosesNormally() async throws {
        try await TestServer.withServer(recordTexts: true) { server in
            let service = WebSocketService(to: server.url(path: "/echo")) { socket in
                try await socket.send(.text("bye"))
            }
            try await service.run()
            let seen = try await server.waitUntil { $0.closeCodes == [.normalClosure] }
            #expect(seen.allTextsReceived == ["bye"])
        }
    }

    @Test func aSocketThatFailsForGoodMakesRunThrow() async throws {
        try await TestServer.withServer { server in
            let service = WebSocketService(to: server.url(path: "/reject?status=401")) { socket in
                for await _ in socket.messages {}
            }
            await #expect(throws: WebSocketError.self) { try await service.run() }
        }
    }

    @Test func shutdownBeforeRunningEndsAtOnce() async throws {
        try await TestServer.withServer { server in
            let service = WebSocketService(to: server.url(path: "/echo")) { socket in
                for await _ in socket.messages {}
            }
            let group = ServiceGroup(services: [service], logger: .quiet)
            await group.triggerGracefulShutdown()
            try await group.run()
            // Whether a connection started first or not, none is left open, and none ended otherwise.
            let seen = try await server.waitUntil { $0.openConnections.isEmpty }
            #expect(seen.closeCodes.allSatisfy { $0 == .goingAway })
        }
    }

    @Test func descriptionLeavesCredentialsOut() {
        let service = WebSocketService(to: "wss://user:secret@example.org:8443/feed?token=abc#part") { _ in }
        #expect(service.description == "WebSocketService(wss://example.org:8443/feed)")
        let plain = WebSocketService(to: "ws://127.0.0.1:9001/echo") { _ in }
        #expect(plain.description == "WebSocketService(ws://127.0.0.1:9001/echo)")
        let made = WebSocketService(socket: ReconnectingWebSocket(to: "ws://127.0.0.1:9001/echo")) { _ in }
        #expect(made.description == "WebSocketService")
    }
}
