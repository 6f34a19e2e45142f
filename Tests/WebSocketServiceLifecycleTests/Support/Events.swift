/// Events sent from any task and awaited in order by the test: the tests synchronise on
/// these, never on sleeps.
final class Events<Element: Sendable>: Sendable {
    private let stream: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    /// Records `element`.
    func send(_ element: Element) {
        continuation.yield(element)
    }

    /// Ends the events: waiting past the last one returns `nil`.
    func finish() {
        continuation.finish()
    }

    /// Waits for the next event; `nil` once finished (or if the test is cancelled).
    func next() async -> Element? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}
