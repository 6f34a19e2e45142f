import Dispatch
import Testing
@testable import WebSocketStreams
import WebSocketSimulation

/// The deterministic simulator in the suite: 1,000 schedules, each checking every invariant
/// after every step, plus its regression seeds, determinism and shrinking. `make test` runs
/// 20,000 more in a process of their own (`wssimulate --schedules 20000`), and `make simulate`
/// a million.
///
/// The schedules run on a thread of their own, never on the cooperative pool: CPU-bound
/// seconds there hold one of its threads (two on a 2-core machine) and every other suite's
/// awaits wait behind them. Seconds of one core beside the suite still slow its timing-bound
/// tests, which is why the 20,000 run apart from it.
@Suite("Deterministic simulation of the client against a simulated peer and network")
struct SimulationTests {
    /// Where the schedules run: one serial queue, so the simulation takes at most one core.
    private static let simulationQueue = DispatchQueue(label: "SimulationTests")

    /// Runs `seeds` on ``simulationQueue``; the first failure's description, and the tally.
    private static func run(_ seeds: ClosedRange<UInt64>) async -> (failure: String?, tally: InvariantTally) {
        await withCheckedContinuation { continuation in
            simulationQueue.async {
                var tally = InvariantTally()
                for seed in seeds {
                    if let failure = SimulationRunner.run(seed: seed, tally: &tally) {
                        continuation.resume(returning: ("\(failure)", tally))
                        return
                    }
                }
                continuation.resume(returning: (nil, tally))
            }
        }
    }

    @Test("1,000 seeded schedules hold every invariant, and every invariant is checked")
    func schedules() async {
        let (failure, tally) = await Self.run(1...1_000)
        if let failure {
            Issue.record("\(failure)")
            return
        }
        #expect(tally.steps >= 1_000 * SimulationRunner.scheduleLength)
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
