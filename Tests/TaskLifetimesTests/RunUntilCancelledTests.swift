import Testing
import TaskLifetimes

@Suite("RunUntilCancelled", .timeLimit(.minutes(1)))
struct RunUntilCancelledTests {
    /// Reports its start, runs until cancelled, then reports its end.
    struct Member: RunUntilCancelled {
        let name: String
        let events: Events<String>
        let ended: Counter

        func runUntilCancelled() async {
            events.send("\(name) started")
            await waitForCancellation()
            ended.increment()
        }
    }

    /// Returns at once.
    struct QuickMember: RunUntilCancelled {
        let events: Events<String>

        func runUntilCancelled() async {
            events.send("quick returned")
        }
    }

    @Test("Every member runs, and all are cancelled with the calling task")
    func membersRunUntilCancelled() async {
        let events = Events<String>()
        let ended = Counter()
        let task = Task {
            await runUntilCancelled(
                Member(name: "timer", events: events, ended: ended),
                Member(name: "notifications", events: events, ended: ended)
            )
        }
        #expect(Set(await events.next(2)) == ["timer started", "notifications started"])
        #expect(ended.current == 0)

        task.cancel()
        await task.cancellableValue
        #expect(ended.current == 2)
    }

    @Test("A member that returns early ends neither the others nor the call")
    func earlyReturnDoesNotEndTheScope() async {
        let events = Events<String>()
        let ended = Counter()
        let cancelRequested = Locked(false)
        let members: [any RunUntilCancelled] = [
            QuickMember(events: events),
            Member(name: "timer", events: events, ended: ended),
        ]
        let task = Task {
            await runUntilCancelled(members)
            return cancelRequested.withLock { $0 }
        }
        #expect(Set(await events.next(2)) == ["quick returned", "timer started"])
        #expect(ended.current == 0)

        cancelRequested.withLock { $0 = true }
        task.cancel()
        #expect(await task.cancellableValue == true)
        #expect(ended.current == 1)
    }

    @Test("With no members it waits for cancellation")
    func noMembers() async {
        let cancelRequested = Locked(false)
        let task = Task {
            await runUntilCancelled([])
            return cancelRequested.withLock { $0 }
        }
        cancelRequested.withLock { $0 = true }
        task.cancel()
        #expect(await task.cancellableValue == true)
    }
}
