import Synchronization
import SynchronizationSupport

/// The server's record of connections, shared by the service thread (which writes)
/// and tests (which read and wait). Waiters are resumed outside the lock.
final class ServerRecorder: Sendable {
    private struct Waiter {
        let id: UInt64
        let condition: @Sendable (TestServer.Snapshot) -> Bool
        let continuation: CheckedContinuation<TestServer.Snapshot, any Error>
    }

    private struct State {
        var snapshot = TestServer.Snapshot(connections: [], rejectedHandshakes: [])
        var indexByID: [Int: Int] = [:]
        var nextID = 1
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
    }

    private let state = AnnotatedMutex(State())

    var snapshot: TestServer.Snapshot {
        state.withLock { $0.snapshot }
    }

    /// Records a new connection and returns its id.
    func opened(_ make: (Int) -> TestServer.ConnectionRecord) -> Int {
        update { state in
            let id = state.nextID
            state.nextID += 1
            state.indexByID[id] = state.snapshot.connections.count
            state.snapshot.connections.append(make(id))
            return id
        }
    }

    /// Changes the record of connection `id`.
    func change(_ id: Int, _ body: (inout TestServer.ConnectionRecord) -> Void) {
        update { state in
            if let index = state.indexByID[id] { body(&state.snapshot.connections[index]) }
        }
    }

    func rejected(path: String, status: Int) {
        update { $0.snapshot.rejectedHandshakes.append((path, status)) }
    }

    /// Waits until `condition` holds for the record, or `timeout` passes.
    func waitUntil(
        timeout: Duration, _ what: String, _ condition: @escaping @Sendable (TestServer.Snapshot) -> Bool
    ) async throws -> TestServer.Snapshot {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withThrowingTaskGroup(of: TestServer.Snapshot?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let ready: TestServer.Snapshot? = self.state.withLock { state in
                            if condition(state.snapshot) { return state.snapshot }
                            state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                            return nil
                        }
                        if let ready { continuation.resume(returning: ready) }
                    }
                } onCancel: {
                    let waiter: Waiter? = self.state.withLock { state in
                        guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                        return state.waiters.remove(at: index)
                    }
                    waiter?.continuation.resume(throwing: CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let snapshot = first else {
                throw TestServerError.timedOut(what)
            }
            return snapshot
        }
    }

    private func update<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, ready): (Result, [(CheckedContinuation<TestServer.Snapshot, any Error>, TestServer.Snapshot)]) =
            state.withLock { state in
                let result = body(&state)
                guard !state.waiters.isEmpty else { return (result, []) }
                var ready: [(CheckedContinuation<TestServer.Snapshot, any Error>, TestServer.Snapshot)] = []
                state.waiters.removeAll { waiter in
                    guard waiter.condition(state.snapshot) else { return false }
                    ready.append((waiter.continuation, state.snapshot))
                    return true
                }
                return (result, ready)
            }
        for (continuation, snapshot) in ready { continuation.resume(returning: snapshot) }
        return result
    }
}
