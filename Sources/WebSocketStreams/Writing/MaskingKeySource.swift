import WebSocketCore

/// Masking keys from OpenSSL's CSPRNG, fetched `batchSize` at a time so a frame costs
/// no library call of its own (RFC 6455 10.3: keys must be unpredictable). Nothing is
/// allocated until the first frame: an idle connection pays nothing for it.
struct MaskingKeySource {
    private let batchSize: Int
    private var keys: [UInt32] = []
    private var index = 0

    init(batchSize: Int = 64) {
        self.batchSize = batchSize
    }

    mutating func next() -> MaskingKey {
        if index == keys.count {
            if keys.isEmpty { keys = [UInt32](repeating: 0, count: batchSize) }
            keys.withUnsafeMutableBytes { Crypto.fillRandom($0) }
            index = 0
        }
        defer { index += 1 }
        return MaskingKey(bits: keys[index])
    }
}
