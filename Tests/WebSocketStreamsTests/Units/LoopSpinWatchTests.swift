
import Testing

@testable import LibWebSocketsLoop
@testable import WebSocketStreams

@Suite("LoopSpinWatch: a loop pass that makes no progress is not repeated back to back")
struct LoopSpinWatchTests {
    private let start = ContinuousClock.now

    /// Feeds `passes` (progress, microseconds after `start`) and returns which were spins.
    private func spins(_ passes: [(progress: Bool, at: Int)], watch: inout LoopSpinWatch) -> [Bool] {
        passes.map { watch.passEnded(madeProgress: $0.progress, at: start + .microseconds($0.at)) }
    }

    @Test("one empty pass between busy ones is not a spin")
    func singleEmptyPass() {
        var watch = LoopSpinWatch()
        let result = spins([(true, 0), (false, 10), (true, 20), (false, 30)], watch: &watch)
        #expect(result == [false, false, false, false])
        #expect(watch.spinningPasses == 0)
    }

    @Test("two empty passes together are tolerated (lws's own timers); every one after them is counted")
    func backToBack() {
        var watch = LoopSpinWatch()
        let result = spins([(false, 0), (false, 5), (false, 10), (false, 15)], watch: &watch)
        #expect(result == [false, false, true, true])
        #expect(watch.spinningPasses == 2)
    }

    @Test("progress or a pause ends a streak")
    func streakEnds() {
        var watch = LoopSpinWatch()
        let result = spins([(false, 0), (false, 5), (true, 10), (false, 15), (false, 20), (false, 5_000), (false, 5_005)], watch: &watch)
        #expect(result == [false, false, false, false, false, false, false])
        #expect(watch.spinningPasses == 0)
    }

    @Test("empty passes far apart (an idle loop woken by a timer) are not a spin")
    func farApart() {
        var watch = LoopSpinWatch()
        let result = spins([(false, 0), (false, 50_000), (false, 1_000_000)], watch: &watch)
        #expect(result == [false, false, false])
        #expect(watch.spinningPasses == 0)
    }
}
