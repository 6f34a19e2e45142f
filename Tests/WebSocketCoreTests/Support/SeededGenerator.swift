import WebSocketTestServer

/// The tests' seeded generator: the test server's SplitMix64, so randomized tests repeat exactly.
typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    /// A generator seeded with `state`.
    init(state: UInt64) {
        self.init(seed: state)
    }

    /// A number in `0..<bound` (`bound` > 0); the slight bias does not matter here.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// `count` random bytes, eight at a time.
    mutating func bytes(_ count: Int) -> [UInt8] {
        let words = (0..<(count + 7) / 8).map { _ in next() }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }
}
