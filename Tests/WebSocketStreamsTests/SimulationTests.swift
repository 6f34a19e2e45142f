import Testing
@testable import WebSocketStreams
import WebSocketSimulation

/// The deterministic simulator in the suite: 20,000 schedules (four shards of 5,000 that
/// Swift Testing runs side by side), each checking every invariant after every step.
@Suite("Deterministic simulation of the client against a simulated peer and network")
struct SimulationTests {
    @Test("20,000 seeded schedules hold every invariant", arguments: 0..<4)
    func schedules(shard: Int) {
        var tally = InvariantTally()
        for index in 0..<5_000 {
            let seed = UInt64(1 + shard * 5_000 + index)
            if let failure = SimulationRunner.run(seed: seed, tally: &tally) {
                Issue.record("\(failure)")
                return
            }
        }
        #expect(tally.steps >= 5_000 * SimulationRunner.scheduleLength)
        for invariant in Invariant.allCases where invariant != .brokenRuleFailsConnection {
            #expect(tally.counts[invariant.rawValue] > 0, "\(invariant) was never checked")
        }
    }

    /// Seed 196 found it: a failure whose close frame never left the writer (the peer had
    /// stopped reading) was reported with its close code, as if the peer had got it; it is a
    /// 1006 now, like a close frame the peer's TCP never acknowledged.
    @Test("regression, seed 196: a close frame that never left does not give the ending its code")
    func seed196() {
        var tally = InvariantTally()
        let failure = SimulationRunner.run(seed: 196, tally: &tally)
        #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "")")
    }

    @Test("a schedule replays identically: same seed, same steps and checks")
    func deterministic() {
        let events = SimulationEvent.schedule(seed: 42, count: SimulationRunner.scheduleLength)
        let first = Simulation.run(seed: 42, events: events)
        let second = Simulation.run(seed: 42, events: events)
        #expect(first.tally.counts == second.tally.counts && first.tally.steps == second.tally.steps)
    }

    @Test("the shrinker finds the shortest failing list (ddmin)")
    func shrinks() {
        let events: [SimulationEvent] = [.ping, .consume, .cancel, .toWire(bytes: 3), .ping, .toPeer(bytes: 1)]
        let shrunk = Shrinker.shrink(events) { $0.contains(.cancel) && $0.contains(.toPeer(bytes: 1)) }
        #expect(shrunk == [.cancel, .toPeer(bytes: 1)])
    }
}
