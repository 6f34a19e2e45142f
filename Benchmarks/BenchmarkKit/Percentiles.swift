/// Nearest-rank percentiles of a sample, the definition wsbench and wsbench-c share.
///
/// The p-th percentile of `n` sorted values is the value at rank `ceil(p / 100 * n)`
/// (1-based, clamped to `1...n`): always one of the measured values, never an
/// interpolation, so p100 is the maximum and p50 of an even-sized sample is the lower
/// middle value.
public struct Percentiles: Sendable {
    /// The sample, ascending.
    public let sorted: [Double]

    /// Sorts `values` once; percentiles are then lookups.
    public init(_ values: [Double]) {
        sorted = values.sorted()
    }

    /// The `p`-th percentile (`0...100`), or `nil` for an empty sample.
    public func value(at p: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Self.rank(of: p, count: sorted.count)
        return sorted[rank - 1]
    }

    /// The 1-based nearest rank of percentile `p` in a sample of `count` values.
    public static func rank(of p: Double, count: Int) -> Int {
        precondition(count > 0, "a percentile of an empty sample has no rank")
        let clampedP = min(max(p, 0), 100)
        // The epsilon keeps products like 0.07 * 100 = 7.000000000000001 at rank 7.
        let rank = Int((clampedP * Double(count) / 100 - 1e-9).rounded(.up))
        return min(max(rank, 1), count)
    }
}
