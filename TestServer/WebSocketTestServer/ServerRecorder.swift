import SynchronizationSupport

/// The server's record of connections, shared by the loop thread (which writes)
/// and tests (which read and wait). Waiters' conditions are evaluated and waiters resumed
/// outside the lock, so a condition may read anything, the server's snapshot included.
final class ServerRecorder: Sendable {
    typealias Condition = @Sendable (TestServer.Snapshot) -> Bool
    typealias Waiter = CheckedContinuation<TestServer.Snapshot, any Error>

    private struct State {
        var snapshot = TestServer.Snapshot(connections: [], rejectedHandshakes: [])
        var indexByID: [Int: Int] = [:]
        var nextID = 1
        var waiters: [UInt64: (condition: Condition, continuation: Waiter)] = [:]
        /// Waiters cancelled before they registered.
        var cancelled = Set<UInt64>()
        var nextWaiterID: UInt64 = 0
    }

    private let state = AnnotatedMutex(State())

    var snapshot: TestServer.Snapshot {
        state.withLock { $0.snapshot }
    }

    /// Records a new connection and returns its id.
    func opened(_ make: (Int) -> TestServer.ConnectionRecord) -> Int {
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.indexByID[id] = state.snapshot.connections.count
            state.snapshot.connections.append(make(id))
            return id
        }
        checkWaiters()
        return id
    }

    /// Changes the record of connection `id`.
    func change(_ id: Int, _ body: (inout TestServer.ConnectionRecord) -> Void) {
        state.withLock { state in
            if let index = state.indexByID[id] { body(&state.snapshot.connections[index]) }
        }
        checkWaiters()
    }

    /// Records that connection `id` ended, unless an earlier end was recorded.
    func markClosed(_ id: Int) {
        change(id) { record in
            if record.closedAt == nil { record.closedAt = .now }
        }
    }

    func rejected(path: String, status: Int) {
        state.withLock { $0.snapshot.rejectedHandshakes.append((path, status)) }
        checkWaiters()
    }

    /// Waits until `condition` holds for the record, or `timeout` passes.
    func waitUntil(timeout: Duration, _ what: String, _ condition: @escaping Condition) async throws -> TestServer.Snapshot {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withThrowingTaskGroup(of: TestServer.Snapshot?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (continuation: Waiter) in
                        let registered: Bool = self.state.withLock { state in
                            if state.cancelled.remove(id) != nil { return false }
                            state.waiters[id] = (condition, continuation)
                            return true
                        }
                        if registered {
                            self.checkWaiters()
                        } else {
                            continuation.resume(throwing: CancellationError())
                        }
                    }
                } onCancel: {
                    let waiter = self.state.withLock { state in
                        guard let waiter = state.waiters.removeValue(forKey: id) else {
                            state.cancelled.insert(id)
                            return Waiter?.none
                        }
                        return waiter.continuation
                    }
                    waiter?.resume(throwing: CancellationError())
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

    /// Resumes the waiters whose condition now holds.
    private func checkWaiters() {
        let (snapshot, waiters) = state.withLock { ($0.snapshot, $0.waiters) }
        guard !waiters.isEmpty else { return }
        let satisfied = waiters.filter { $0.value.condition(snapshot) }.map(\.key)
        guard !satisfied.isEmpty else { return }
        let ready = state.withLock { state in satisfied.compactMap { state.waiters.removeValue(forKey: $0) } }
        for waiter in ready { waiter.continuation.resume(returning: snapshot) }
    }
}
