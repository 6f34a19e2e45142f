/// A small, fast, seeded generator (SplitMix64), so randomized tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    /// A number in `0..<bound` (`bound` > 0); the slight bias does not matter here.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// `count` random bytes, eight at a time.
    mutating func bytes(_ count: Int) -> [UInt8] {
        let words = (0..<(count + 7) / 8).map { _ in next() }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }
}
