/// Runs schedules by seed, and shrinks the first failing one.
public enum SimulationRunner {
    /// Events per schedule.
    public static let scheduleLength = 40

    /// The failing seed, its shrunk schedule and the invariant it breaks.
    public struct Failure: Sendable, CustomStringConvertible {
        public var seed: UInt64
        public var violation: InvariantViolation
        public var shrunk: [SimulationEvent]
        public var shrunkViolation: InvariantViolation

        public var description: String {
            """
            seed \(seed) breaks "\(violation.invariant)": \(violation.detail)
            reproduce: swift run -c release -Xswiftc -enable-testing --scratch-path .build-simulate wssimulate --seed \(seed)
            shrunk to \(shrunk.count) events (\(shrunkViolation.detail)): \(shrunk.map(\.description).joined(separator: ", "))
            """
        }
    }

    /// Runs the schedule of `seed`; on failure, shrinks it.
    public static func run(seed: UInt64, tally: inout InvariantTally) -> Failure? {
        let events = SimulationEvent.schedule(seed: seed, count: scheduleLength)
        let outcome = Simulation.run(seed: seed, events: events)
        tally.add(outcome.tally)
        guard let violation = outcome.violation else { return nil }
        let shrunk = Shrinker.shrink(events) { candidate in
            Simulation.run(seed: seed, events: candidate).violation?.invariant == violation.invariant
        }
        let shrunkViolation = Simulation.run(seed: seed, events: shrunk).violation ?? violation
        return Failure(seed: seed, violation: violation, shrunk: shrunk, shrunkViolation: shrunkViolation)
    }
}
