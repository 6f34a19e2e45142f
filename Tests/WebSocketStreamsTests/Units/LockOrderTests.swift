import SynchronizationSupport
import Testing
@testable import WebSocketStreams

#if DEBUG
@Suite("Lock order: written once, checked in debug builds")
struct LockOrderTests {
    @Test("the SDK's order: the reconnecting socket's lock, then the write side's, then the machine's")
    func order() {
        #expect(LockRank.reconnectingStorage.value < LockRank.writeSide.value)
        #expect(LockRank.writeSide.value < LockRank.connectionMachine.value)
        #expect(LockRank.connectionMachine.value < LockRank.leaf.value)
    }

    @Test("locks taken in the order pass, and a try-lock against it is allowed (it cannot wait)")
    func inOrder() {
        let writeSide = AnnotatedMutex(1, rank: .writeSide)
        let machine = AnnotatedMutex(2, rank: .connectionMachine)
        let leaf = AnnotatedMutex(3)
        let sum = writeSide.withLock { first in machine.withLock { second in leaf.withLock { first + second + $0 } } }
        #expect(sum == 6)
        let tried = machine.withLock { _ in writeSide.withLockIfAvailable { $0 } }
        #expect(tried == 1)
        // Released in any order, the thread holds nothing afterwards: the order starts over.
        #expect(machine.withLock { $0 } == 2 && writeSide.withLock { $0 } == 1)
    }

    @Test("the write side's lock taken while the machine's is held stops the process, naming both")
    func againstTheOrderStops() async {
        await #expect(processExitsWith: .failure) {
            let writeSide = AnnotatedMutex(0, rank: .writeSide)
            let machine = AnnotatedMutex(0, rank: .connectionMachine)
            machine.withLock { _ in writeSide.withLock { _ in } }
        }
    }

    @Test("a leaf lock held while any other lock is taken stops the process")
    func nestedLeavesStop() async {
        await #expect(processExitsWith: .failure) {
            let outer = AnnotatedMutex(0)
            let inner = AnnotatedMutex(0)
            outer.withLock { _ in inner.withLock { _ in } }
        }
    }
}
#endif
