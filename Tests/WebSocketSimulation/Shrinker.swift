/// Delta debugging (Zeller's ddmin) over a failing schedule: the shortest event list found
/// that still breaks the same invariant.
public enum Shrinker {
    public static func shrink(
        _ events: [SimulationEvent], fails: ([SimulationEvent]) -> Bool
    ) -> [SimulationEvent] {
        var current = events
        var chunks = 2
        while current.count >= 2 {
            let size = (current.count + chunks - 1) / chunks
            var reduced = false
            var start = 0
            while start < current.count {
                let candidate = Array(current[..<start] + current[min(current.count, start + size)...])
                if !candidate.isEmpty, fails(candidate) {
                    current = candidate
                    chunks = max(chunks - 1, 2)
                    reduced = true
                    break
                }
                start += size
            }
            if !reduced {
                if chunks >= current.count { break }
                chunks = min(current.count, chunks * 2)
            }
        }
        // Last, single events one at a time.
        var index = 0
        while index < current.count, current.count > 1 {
            var candidate = current
            candidate.remove(at: index)
            if fails(candidate) { current = candidate } else { index += 1 }
        }
        return current
    }
}
