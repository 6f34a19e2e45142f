import FoundationEssentials
import Glibc
import Synchronization
import Testing
import WebSocketStreams
import WebSocketTestServer

/// The name of the thread running the caller.
private func currentThreadName() -> String {
    guard let file = fopen("/proc/thread-self/comm", "r") else { return "?" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 32)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "?" }
    var name = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    while name.last == "\n" { name.removeLast() }
    return name
}

@Suite("A WebSocketEventLoop as the task executor of the code using its connections")
struct LoopExecutorTests {
    @Test("a task preferring the loop runs on its loop thread, and echoes flow")
    func taskRunsOnLoopThread() async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "exec-echo")
            let names = try await withTaskExecutorPreference(loop) {
                let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
                var names: Set<String> = [currentThreadName()]
                var messages = connection.messages.makeAsyncIterator()
                for index in 0..<200 {
                    try await connection.send(.text("message \(index)"))
                    let echo = await messages.next()
                    #expect(echo == .text("message \(index)"))
                    names.insert(currentThreadName())
                }
                await connection.close()
                names.insert(currentThreadName())
                #expect(connection.closeCode == .normalClosure)
                return names
            }
            #expect(names == ["exec-echo"])
            await loop.shutdown()
        }
    }

    /// An observer runs while the loop writes; if what it does wakes the connection again
    /// (here: cancelling the task that reads its messages, whose handler runs right there),
    /// that second wake-up must wait for the write in progress, not run inside it.
    @Test("an observer that wakes the connection from inside a write on the loop's thread")
    func observerWakingTheConnectionDuringAWrite() async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "exec-reentry")
            let reader = Mutex<Task<Int, Never>?>(nil)
            var configuration = WebSocketConfiguration()
            configuration.wireEventObserver = { event in
                if event.kind == .pingSent { reader.withLock { $0 }?.cancel() }
            }
            let connection = try await WebSocket.connect(
                to: server.url(path: "/echo"), configuration: configuration, eventLoop: loop)
            let started = AsyncStream<Void>.makeStream()
            let task = Task {
                started.continuation.yield()
                var count = 0
                for await _ in connection.messages { count += 1 }
                return count
            }
            reader.withLock { $0 = task }
            var signal = started.stream.makeAsyncIterator()
            await signal.next()
            // On the loop's executor the ping is written at once, inside `ping()`.
            let outcome: Result<Duration, any Error> = await withTaskExecutorPreference(loop) {
                do { return .success(try await connection.ping()) } catch { return .failure(error) }
            }
            // The reader was cancelled, so the connection closes (1001), unless the close below
            // reaches the state machine first (1000: seen under ThreadSanitizer's timing); the
            // ping may or may not have been answered first. What matters: no crash, no hang, a
            // clean close handshake.
            #expect(await task.value == 0)
            await connection.close()
            #expect(connection.closeCode == .goingAway || connection.closeCode == .normalClosure,
                    "\(String(describing: connection.closeCode))")
            if case .failure(let error) = outcome { #expect(error is WebSocketError, "\(error)") }
            await loop.shutdown()
        }
    }

    @Test("pipelined sends from a task on the loop all arrive, in order")
    func pipelinedSendsOnLoop() async throws {
        try await withTestServer { server in
            let loop = WebSocketEventLoop(name: "exec-pipe")
            let received = try await withTaskExecutorPreference(loop) {
                let connection = try await WebSocket.connect(to: server.url(path: "/echo"), eventLoop: loop)
                for index in 0..<500 {
                    try await connection.send(.binary(Data(repeating: UInt8(index % 256), count: 1000)))
                }
                var received = 0
                var messages = connection.messages.makeAsyncIterator()
                while received < 500, let message = await messages.next() {
                    #expect(message == .binary(Data(repeating: UInt8(received % 256), count: 1000)))
                    received += 1
                }
                await connection.close()
                return received
            }
            #expect(received == 500)
            await loop.shutdown()
        }
    }

    @Test("a loop used only as an executor starts its thread; after shutdown its jobs run elsewhere")
    func executorBeforeAndAfterShutdown() async throws {
        let loop = WebSocketEventLoop(name: "exec-only")
        let before = await withTaskExecutorPreference(loop) {
            await Task.yield()
            return currentThreadName()
        }
        #expect(before == "exec-only")
        await loop.shutdown()
        let after = await withTaskExecutorPreference(loop) {
            await Task.yield()
            return currentThreadName()
        }
        #expect(after != "exec-only")
    }
}
