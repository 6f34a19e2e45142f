import WebSocketCore

/// Masking keys from OpenSSL's CSPRNG, fetched `batchSize` at a time so a frame costs
/// no library call of its own (RFC 6455 10.3: keys must be unpredictable). Nothing is
/// allocated until the first frame: an idle connection pays nothing for it.
///
/// ``seeded(_:)`` makes a predictable source instead, for tests and the simulator only
/// (``ClientEngine`` takes its source from its driver): the same seed gives the same keys.
struct MaskingKeySource {
    private let batchSize: Int
    private var keys: [UInt32] = []
    private var index = 0
    /// A SplitMix64 state when the keys are predictable; `nil` for the CSPRNG.
    private var seed: UInt64?

    init(batchSize: Int = 64) {
        self.batchSize = batchSize
    }

    /// Predictable keys (SplitMix64 from `seed`): never for a real connection.
    static func seeded(_ seed: UInt64) -> MaskingKeySource {
        var source = MaskingKeySource(batchSize: 64)
        source.seed = seed
        return source
    }

    mutating func next() -> MaskingKey {
        if index == keys.count {
            if keys.isEmpty { keys = [UInt32](repeating: 0, count: batchSize) }
            if seed != nil { fillSeeded() } else { keys.withUnsafeMutableBytes { Crypto.fillRandom($0) } }
            index = 0
        }
        defer { index += 1 }
        return MaskingKey(bits: keys[index])
    }

    private mutating func fillSeeded() {
        guard var state = seed else { return }
        for position in keys.indices {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            keys[position] = UInt32(truncatingIfNeeded: mixed ^ (mixed >> 31))
        }
        seed = state
    }
}
