import SynchronizationSupport
import WebSocketStreams

/// Runs handler bodies: one child task per connection in a task group that lives as long as
/// the server, so stopping the server cancels every handler and waits for them all.
final class HandlerRunner: Sendable {
    private typealias Started = (connection: TestServer.Connection, body: TestServer.Handler.Body)

    private let starts: AsyncStream<Started>.Continuation
    private let root: Task<Void, Never>
    private let recorder: ServerRecorder
    /// Connections whose handler has not returned, so `stop` can end them if the loop is gone.
    private let running = RunningHandlers()

    init(recorder: ServerRecorder) {
        self.recorder = recorder
        let (stream, continuation) = AsyncStream.makeStream(of: Started.self)
        starts = continuation
        let running = running
        root = Task {
            await withDiscardingTaskGroup { group in
                for await started in stream {
                    group.addTask {
                        await Self.run(started.body, on: started.connection, recorder: recorder)
                        running.links.withLock { _ = $0.removeValue(forKey: started.connection.id) }
                    }
                }
            }
        }
    }

    /// Starts `body` on `connection` (from the loop thread: it only enqueues).
    func start(_ body: @escaping TestServer.Handler.Body, on connection: TestServer.Connection) {
        running.links.withLock { $0[connection.id] = connection.link }
        starts.yield((connection, body))
    }

    /// Cancels every handler and returns once all have returned. Connections the loop can
    /// no longer end (it stopped) are marked ended first, so no handler waits on them.
    func stop() async {
        starts.finish()
        root.cancel()
        for link in running.links.withLock({ Array($0.values) }) { link.ended() }
        await root.value
    }

    /// Runs a body, then closes its connection as the body ended: 1000 when it returned,
    /// 1011 with the error when it threw.
    private static func run(_ body: TestServer.Handler.Body, on connection: TestServer.Connection, recorder: ServerRecorder) async {
        do {
            try await body(connection)
            await connection.close(code: .normalClosure)
        } catch {
            let description = String(describing: error)
            recorder.change(connection.id) { $0.handlerError = description }
            await connection.close(code: .internalServerError, reason: Self.closeReason(description))
        }
    }

    /// `text` cut to the 123 bytes a close reason holds, on a character boundary.
    static func closeReason(_ text: String) -> String {
        var reason = ""
        for character in text {
            guard reason.utf8.count + character.utf8.count <= 123 else { break }
            reason.append(character)
        }
        return reason
    }
}

/// The links of handlers still running, by connection id.
private final class RunningHandlers: Sendable {
    let links = AnnotatedMutex([Int: HandlerLink]())
}
