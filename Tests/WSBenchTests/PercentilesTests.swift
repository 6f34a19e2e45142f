import BenchmarkKit
import Testing

@Suite("Nearest-rank percentiles")
struct PercentilesTests {
    @Test("1...100: each percentile is the value of its rank")
    func hundredValues() {
        let sample = Percentiles((1...100).map(Double.init).shuffled())
        #expect(sample.value(at: 50) == 50)
        #expect(sample.value(at: 99) == 99)
        #expect(sample.value(at: 100) == 100)
        #expect(sample.value(at: 0) == 1)
        #expect(sample.value(at: 7) == 7)  // 7 / 100 * 100 is 7.000000000000001 in Double
    }

    @Test("small samples never interpolate")
    func smallSamples() {
        let four = Percentiles([40, 10, 30, 20])
        #expect(four.value(at: 25) == 10)
        #expect(four.value(at: 50) == 20)
        #expect(four.value(at: 75) == 30)
        #expect(four.value(at: 99) == 40)
        #expect(Percentiles([5]).value(at: 50) == 5)
        #expect(Percentiles([]).value(at: 50) == nil)
    }

    @Test("ranks are ceil(p/100 * n), clamped to 1...n")
    func ranks() {
        #expect(Percentiles.rank(of: 50, count: 3) == 2)
        #expect(Percentiles.rank(of: 99, count: 1000) == 990)
        #expect(Percentiles.rank(of: 99.9, count: 1000) == 999)
        #expect(Percentiles.rank(of: -5, count: 10) == 1)
        #expect(Percentiles.rank(of: 500, count: 10) == 10)
    }
}
