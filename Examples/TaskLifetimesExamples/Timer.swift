/// A timer as an `AsyncStream`: yields 1, 2, 3, ... every `interval`, forever.
///
/// The stream never ends by itself; iterating it runs until the iterating task
/// is cancelled, which also stops the ticking task (via `onTermination`).
func timer(every interval: Duration) -> AsyncStream<Int> {
    AsyncStream { continuation in
        let ticking = Task {
            var tick = 0
            while true {
                do { try await Task.sleep(for: interval) } catch { break }
                tick += 1
                continuation.yield(tick)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in ticking.cancel() }
    }
}
