import Testing
@testable import TaskLifetimes

@Suite("TaskBag", .timeLimit(.minutes(1)))
struct TaskBagTests {
    @Test("cancel() cancels a task awaiting a never-ending stream and empties the bag")
    func cancelEndsTask() async {
        let events = Events<String>()
        let never = NeverEndingStream { events.send("terminated \($0)") }
        let bag = TaskBag()
        bag.addTask {
            events.send("started")
            await never.iterate()
            events.send("ended, cancelled: \(Task.isCancelled)")
        }
        #expect(await events.next() == "started")
        #expect(bag.count == 1)

        bag.cancel()

        let ending = await events.next(2)
        #expect(Set(ending) == ["terminated cancelled", "ended, cancelled: true"])
        #expect(bag.count == 0)
    }

    @Test("Releasing the bag deallocates it and cancels its task")
    func deinitEndsTask() async {
        let events = Events<String>()
        let never = NeverEndingStream { events.send("terminated \($0)") }
        weak var weakBag: TaskBag?
        do {
            let bag = TaskBag()
            weakBag = bag
            bag.addTask {
                events.send("started")
                await never.iterate()
                events.send("ended, cancelled: \(Task.isCancelled)")
            }
            #expect(await events.next() == "started")
        }
        let ending = await events.next(2)
        #expect(Set(ending) == ["terminated cancelled", "ended, cancelled: true"])
        #expect(weakBag == nil)
    }

    @Test("Task { }.stored(in:) is cancelled by cancel()")
    func storedTask() async {
        let events = Events<String>()
        let never = NeverEndingStream { events.send("terminated \($0)") }
        let bag = TaskBag()
        let task = Task {
            events.send("started")
            await never.iterate()
            return Task.isCancelled
        }
        task.stored(in: bag)
        #expect(await events.next() == "started")
        #expect(bag.count == 1)

        bag.cancel()

        #expect(await task.cancellableValue == true)
        #expect(await events.next() == "terminated cancelled")
        #expect(bag.count == 0)
    }

    @Test("A finished task removes itself from the bag")
    func finishedTaskIsRemoved() async {
        let bag = TaskBag()
        let ran = Counter()
        await bag.makeTask { ran.increment() }.value
        #expect(ran.current == 1)
        #expect(bag.count == 0)

        let added = Task { ran.increment() }
        await bag.insert(added).value
        #expect(ran.current == 2)
        #expect(bag.count == 0)
    }

    @Test("Tasks added while other tasks call cancel() are all cancelled by the last cancel()")
    func concurrentAddAndCancel() async {
        let taskCount = 1_000
        let ended = Events<Int>()
        let bag = TaskBag()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<taskCount {
                group.addTask {
                    bag.addTask {
                        await waitForCancellation()
                        ended.send(index)
                    }
                    if index.isMultiple(of: 10) { bag.cancel() }
                }
            }
        }
        bag.cancel()
        let endedIndices = await ended.next(taskCount)
        #expect(Set(endedIndices).count == taskCount)
        #expect(bag.count == 0)
    }
}

/// Suspends until the current task is cancelled, via a never-ending stream.
func waitForCancellation() async {
    await NeverEndingStream { _ in }.iterate()
}
