import Glibc
import WebSocketSimulation

/// wssimulate: runs simulated schedules sharded over the cores, or replays one seed.
///
///     wssimulate --schedules 1000000 [--first-seed 1] [--shards 2]
///     wssimulate --seed 123456
func value(of flag: String, in arguments: [String]) -> UInt64? {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return UInt64(arguments[index + 1])
}

let arguments = CommandLine.arguments
if let seed = value(of: "--seed", in: arguments) {
    var tally = InvariantTally()
    if let failure = SimulationRunner.run(seed: seed, tally: &tally) {
        print(failure)
        exit(1)
    }
    print("seed \(seed): \(tally.steps) steps, every invariant held")
    exit(0)
}

let schedules = Int(value(of: "--schedules", in: arguments) ?? 1_000_000)
let firstSeed = value(of: "--first-seed", in: arguments) ?? 1
let shards = Int(value(of: "--shards", in: arguments) ?? 2)
let started = ContinuousClock.now

/// One shard's result: its tally and its first failure.
struct ShardResult: Sendable {
    var tally = InvariantTally()
    var failure: SimulationRunner.Failure?
    var failedAfter = 0
}

let results = await withTaskGroup(of: ShardResult.self) { group in
    for shard in 0..<shards {
        group.addTask {
            var result = ShardResult()
            var index = shard
            var count = 0
            while index < schedules {
                count += 1
                if let failure = SimulationRunner.run(seed: firstSeed &+ UInt64(index), tally: &result.tally) {
                    result.failure = failure
                    result.failedAfter = index + 1
                    break
                }
                index += shards
            }
            return result
        }
    }
    var all: [ShardResult] = []
    for await result in group { all.append(result) }
    return all
}

var total = InvariantTally()
for result in results { total.add(result.tally) }
let elapsed = ContinuousClock.now - started
let failure = results.compactMap { result in result.failure.map { (result.failedAfter, $0) } }.min { $0.0 < $1.0 }
let run = failure.map { $0.0 } ?? schedules
print("schedules: \(run) of \(schedules) (seeds \(firstSeed)...), shards: \(shards)")
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print("time: \(Int(seconds * 10) / 10).\(Int(seconds * 10) % 10) s")
print("steps: \(total.steps)")
for invariant in Invariant.allCases {
    print("  \(total.counts[invariant.rawValue]) checks: \(invariant)")
}
if let (after, failure) = failure {
    print("FAILED after \(after) schedules")
    print(failure)
    exit(1)
}
print("every invariant held")
