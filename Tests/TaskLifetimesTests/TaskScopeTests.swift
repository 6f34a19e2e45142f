import Testing
import TaskLifetimes

@Suite("TaskScope", .timeLimit(.minutes(1)))
struct TaskScopeTests {
    /// A log shared by the operations of a test.
    final class Log: Sendable {
        private let lines = Locked<[String]>([])
        var all: [String] { lines.value }
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    @Test("The same id again does nothing")
    func sameIDDoesNothing() async {
        let events = Events<String>()
        let starts = Counter()
        let scope = TaskScope<Int>()
        await scope.task(id: 1) {
            starts.increment()
            events.send("started")
            await waitForCancellation()
        }
        #expect(await events.next() == "started")

        await scope.task(id: 1) { starts.increment() }
        await scope.task(id: 1) { starts.increment() }

        #expect(starts.current == 1)
        #expect(scope.id == 1)
        await scope.cancel()
    }

    @Test("A new id cancels the old operation and waits for its end before the new one's first line")
    func switchWaitsForOldOperation() async {
        let log = Log()
        let events = Events<String>()
        let scope = TaskScope<String>()
        await scope.task(id: "alice") {
            log.append("alice started")
            events.send("alice started")
            await waitForCancellation()
            log.append("alice cancelled")
            await yieldRepeatedly(50)  // A cleanup that takes a while.
            log.append("alice cleaned up")
        }
        #expect(await events.next() == "alice started")

        await scope.task(id: "bob") {
            log.append("bob started")
            events.send("bob started")
            await waitForCancellation()
            log.append("bob cancelled")
        }
        #expect(await events.next() == "bob started")
        #expect(log.all == ["alice started", "alice cancelled", "alice cleaned up", "bob started"])

        await scope.cancel()
        #expect(log.all.last == "bob cancelled")
        #expect(scope.id == nil)
    }

    @Test("cancel() waits for the operation to return; afterwards the same id starts again")
    func cancelWaitsForEnd() async {
        let log = Log()
        let scope = TaskScope<Int>()
        for round in 1...2 {
            await scope.task(id: 7) {
                log.append("started \(round)")
                await waitForCancellation()
                await yieldRepeatedly(20)
                log.append("ended \(round)")
            }
            await scope.cancel()
            #expect(log.all.last == "ended \(round)")
        }
        #expect(log.all == ["started 1", "ended 1", "started 2", "ended 2"])
    }

    @Test("1,000 rapid id changes from concurrent callers end with one operation, for the last id")
    func rapidSwitching() async throws {
        struct Tally {
            var running: Set<Int> = []
            var maxRunning = 0
            var started = 0
        }
        let changes = 1_000
        let tally = Locked(Tally())
        let started = Events<Int>()
        let scope = TaskScope<Int>()

        // 10 callers at once, each switching 100 times in a row.
        let callers = 10
        await withTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    for change in 1...(changes / callers) {
                        let id = caller * (changes / callers) + change
                        await scope.task(id: id) {
                            tally.withLock { tally in
                                tally.started += 1
                                tally.running.insert(id)
                                tally.maxRunning = max(tally.maxRunning, tally.running.count)
                            }
                            started.send(id)
                            await waitForCancellation()
                            await yieldRepeatedly(10)
                            _ = tally.withLock { $0.running.remove(id) }
                        }
                    }
                }
            }
        }

        let last = try #require(scope.id)
        await started.wait(for: last)
        var result = tally.withLock { $0 }
        #expect(result.running == [last])
        #expect(result.maxRunning == 1)
        #expect(result.started <= changes)

        await scope.cancel()
        result = tally.withLock { $0 }
        #expect(result.running.isEmpty)
        #expect(result.maxRunning == 1)
    }

    @Test("An id superseded while the previous operation winds down never starts")
    func supersededIDNeverStarts() async throws {
        let events = Events<String>()
        let gate = Gate()
        defer { gate.open() }
        let scope = TaskScope<Int>()
        await scope.task(id: 1) {
            events.send("1 started")
            await waitForCancellation()
            events.send("1 cancelled")
            await gate.wait()  // Winds down only when the test says so.
        }
        #expect(await events.next() == "1 started")

        let switchTo2 = Task { await scope.task(id: 2) { events.send("2 started") } }
        #expect(await events.next() == "1 cancelled")
        let switchTo3 = Task { await scope.task(id: 3) { events.send("3 started") } }
        // Wait until the switch to 3 is recorded (yields, no sleeping).
        var yields = 0
        while scope.id != 3, yields < 1_000_000 {
            await Task.yield()
            yields += 1
        }
        try #require(scope.id == 3)

        gate.open()
        await switchTo2.cancellableValue
        await switchTo3.cancellableValue
        #expect(await events.next() == "3 started")
        await scope.cancel()
    }

    @Test("1,000 sequential id changes never overlap and end on the last id")
    func sequentialSwitching() async {
        struct Running {
            var current = 0
            var max = 0
        }
        let running = Locked(Running())
        let lastStarted = Locked(0)
        let scope = TaskScope<Int>()
        for id in 1...1_000 {
            await scope.task(id: id) {
                running.withLock { $0.current += 1; $0.max = Swift.max($0.max, $0.current) }
                lastStarted.withLock { $0 = id }
                await waitForCancellation()
                running.withLock { $0.current -= 1 }
            }
        }
        await scope.cancel()
        #expect(running.withLock { $0.max } == 1)
        #expect(running.withLock { $0.current } == 0)
        #expect(lastStarted.withLock { $0 } == 1_000)
    }

    @Test("Releasing the scope deallocates it and cancels its operation")
    func deinitCancels() async {
        let events = Events<String>()
        let never = NeverEndingStream { events.send("terminated \($0)") }
        weak var weakScope: TaskScope<Int>?
        do {
            let scope = TaskScope<Int>()
            weakScope = scope
            await scope.task(id: 1) {
                events.send("started")
                await never.iterate()
                events.send("ended, cancelled: \(Task.isCancelled)")
            }
            #expect(await events.next() == "started")
        }
        let ending = await events.next(2)
        #expect(Set(ending) == ["terminated cancelled", "ended, cancelled: true"])
        #expect(weakScope == nil)
    }
}
