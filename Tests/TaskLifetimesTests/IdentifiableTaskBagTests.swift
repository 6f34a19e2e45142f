import Testing
@testable import TaskLifetimes

@Suite("IdentifiableTaskBag", .timeLimit(.minutes(1)))
struct IdentifiableTaskBagTests {
    @Test("Starting an id that is running is ignored")
    func duplicateIDIgnored() async {
        let events = Events<String>()
        let never = NeverEndingStream { events.send("terminated \($0)") }
        let duplicateRan = Counter()
        let bag = IdentifiableTaskBag<Int>()

        let first = bag.startTask(id: 1) {
            events.send("started")
            await never.iterate()
        }
        #expect(first)
        #expect(await events.next() == "started")

        let second = bag.startTask(id: 1) { duplicateRan.increment() }
        #expect(!second)
        #expect(bag.isRunning(id: 1))
        #expect(!bag.isRunning(id: 2))
        #expect(bag.count == 1)

        bag.cancel(id: 1)
        #expect(!bag.isRunning(id: 1))
        #expect(await events.next() == "terminated cancelled")
        #expect(duplicateRan.current == 0)
    }

    @Test("A finished task is removed, so its id can start again")
    func removalOnCompletion() async throws {
        let bag = IdentifiableTaskBag<String>()
        let ran = Counter()
        let task = try #require(bag.makeTask(id: "a") { ran.increment() })
        await task.value
        #expect(ran.current == 1)
        #expect(!bag.isRunning(id: "a"))

        let again = try #require(bag.makeTask(id: "a") { ran.increment() })
        await again.value
        #expect(ran.current == 2)
        #expect(bag.count == 0)
    }

    @Test("A cancelled task finishing late does not remove the newer task with its id")
    func lateFinishKeepsNewerTask() async throws {
        let events = Events<String>()
        let bag = IdentifiableTaskBag<Int>()
        let old = try #require(bag.makeTask(id: 1) {
            events.send("old started")
            await waitForCancellation()
            await yieldRepeatedly(10)
        })
        #expect(await events.next() == "old started")
        bag.cancel(id: 1)
        let started = bag.startTask(id: 1) {
            events.send("new started")
            await waitForCancellation()
        }
        #expect(started)

        await old.cancellableValue
        #expect(bag.isRunning(id: 1))
        #expect(await events.next() == "new started")
        bag.cancel()
        #expect(!bag.isRunning(id: 1))
    }

    @Test("cancel() cancels every task and empties the bag")
    func cancelAll() async {
        let terminated = Events<Int>()
        let started = Events<Int>()
        let bag = IdentifiableTaskBag<Int>()
        for id in 0..<10 {
            let never = NeverEndingStream { _ in terminated.send(id) }
            bag.startTask(id: id) {
                started.send(id)
                await never.iterate()
            }
        }
        #expect(Set(await started.next(10)).count == 10)
        #expect(bag.count == 10)

        bag.cancel()

        #expect(Set(await terminated.next(10)) == Set(0..<10))
        #expect(bag.count == 0)
    }

    @Test("add(_:id:) and stored(in:id:) keep one task per id and cancel the extra one")
    func addedTasks() async throws {
        let bag = IdentifiableTaskBag<String>()
        let events = Events<String>()
        let first = Task {
            events.send("first started")
            await waitForCancellation()
            return "first ended"
        }
        let watcher = try #require(bag.insert(first, id: "room"))
        #expect(await events.next() == "first started")

        let extra = Task {
            await waitForCancellation()
            return "extra ended"
        }
        #expect(extra.stored(in: bag, id: "room") == false)
        #expect(await extra.cancellableValue == "extra ended")  // Only if cancelled.
        #expect(bag.isRunning(id: "room"))

        bag.cancel(id: "room")
        #expect(await first.cancellableValue == "first ended")
        await watcher.value
        #expect(bag.count == 0)
    }

    @Test("10,000 concurrent startTask calls on 100 ids run one operation per id at a time")
    func concurrentStarts() async {
        struct Tally {
            var running: [Int: Int] = [:]
            var maxRunningPerID = 0
            var started = 0
        }
        let ids = 100
        let calls = 10_000
        let tally = Locked(Tally())
        let finished = Events<Int>()
        let bag = IdentifiableTaskBag<Int>()

        let accepted = await withTaskGroup(of: Bool.self) { group in
            for call in 0..<calls {
                group.addTask {
                    let id = call % ids
                    return bag.startTask(id: id) {
                        tally.withLock { tally in
                            tally.started += 1
                            tally.running[id, default: 0] += 1
                            tally.maxRunningPerID = max(tally.maxRunningPerID, tally.running[id]!)
                        }
                        await yieldRepeatedly(3)
                        tally.withLock { $0.running[id, default: 0] -= 1 }
                        finished.send(id)
                    }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }

        let finishedIDs = await finished.next(accepted)
        let result = tally.withLock { $0 }
        #expect(accepted >= ids)
        #expect(Set(finishedIDs).count == ids)
        #expect(result.started == accepted)
        #expect(result.maxRunningPerID == 1)
        #expect(result.running.values.allSatisfy { $0 == 0 })
    }

    @Test("Releasing the bag deallocates it and cancels its tasks")
    func deinitEndsTasks() async {
        let events = Events<String>()
        weak var weakBag: IdentifiableTaskBag<Int>?
        do {
            let bag = IdentifiableTaskBag<Int>()
            weakBag = bag
            for id in 0..<2 {
                let never = NeverEndingStream { events.send("terminated \(id) \($0)") }
                bag.startTask(id: id) {
                    events.send("started")
                    await never.iterate()
                }
            }
            #expect(await events.next(2) == ["started", "started"])
        }
        let ending = await events.next(2)
        #expect(Set(ending) == ["terminated 0 cancelled", "terminated 1 cancelled"])
        #expect(weakBag == nil)
    }
}
