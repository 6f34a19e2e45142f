import Testing

/// Waits until `condition` holds, checking it between short pauses, for at most `timeout`:
/// the one way these tests wait for a state they cannot be told about.
///
/// ```swift
/// await eventually("the sender parks") { connection.parkedSenders == 1 }
/// ```
///
/// - Returns: `true` once `condition` holds; `false`, after recording an issue naming `what`,
///   if `timeout` passed first.
@discardableResult
func eventually(
    _ what: String, timeout: Duration = .seconds(5), sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while await !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("timed out after \(timeout) waiting for \(what)", sourceLocation: sourceLocation)
            return false
        }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}
