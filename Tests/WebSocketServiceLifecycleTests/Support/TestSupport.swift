import Logging

/// Runs `operation`, throwing ``TestFailure`` if it has not finished within `limit`
/// (it is then cancelled). A bound on a wait for an event, not a way to wait.
func withTimeout<Value: Sendable>(
    _ limit: Duration, waitingFor description: String, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TestFailure("\(description): not within \(limit)")
        }
        return value
    }
}

/// A test setup problem, with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Logger {
    /// A logger that drops everything, for the service groups under test.
    static let quiet = Logger(label: "WebSocketServiceLifecycleTests", factory: { _ in SwiftLogNoOpLogHandler() })
}
