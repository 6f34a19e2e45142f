/// Distinct JSON texts like a market-data feed's (trades), for measuring compression.
enum JSONFeed {
    /// `count` messages of `size` bytes each: arrays of trade objects cut to length (so not
    /// always valid JSON at the end, which deflate does not care about), seeded, so every run
    /// sends the same bytes.
    static func messages(count: Int, size: Int) -> [String] {
        var generator = SplitMix(seed: 0x5EED)
        let symbols = ["BTCUSD", "ETHUSD", "SOLUSD", "XRPUSD"]
        var sequence = 0
        return (0..<count).map { _ in
            var text = "["
            while text.utf8.count < size {
                sequence += 1
                let price = Double(generator.next() % 6_000_000) / 100
                let quantity = Double(generator.next() % 50_000) / 10_000
                let side = generator.next() % 2 == 0 ? "buy" : "sell"
                text += #"{"sym":"\#(symbols[Int(generator.next() % 4)])","px":\#(price),"qty":\#(quantity),"#
                    + #""ts":\#(1_700_000_000_000 + sequence * 37),"side":"\#(side)"},"#
            }
            return String(text.utf8.prefix(size))!
        }
    }

    /// A small seeded generator (SplitMix64).
    private struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
