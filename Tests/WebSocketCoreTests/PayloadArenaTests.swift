import Foundation
import Testing

@testable import WebSocketCore

@Suite("PayloadArena: small payloads sharing blocks")
struct PayloadArenaTests {
    /// A payload whose bytes say which message it is.
    private static func payload(_ index: Int, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }
    }

    @Test("payloads across many blocks keep their bytes, released in any order on any thread")
    func contentsSurviveReleaseFromOtherThreads() async {
        let arena = PayloadArena()
        arena.isEnabled = true
        let sizes = [15, 16, 100, 128, 511, 512]
        // About 3,000 messages: several blocks, each retired while messages still hold it.
        var messages: [(index: Int, data: Data)] = []
        for index in 0..<3000 {
            let bytes = Self.payload(index, count: sizes[index % sizes.count])
            messages.append((index, bytes.withUnsafeBytes { arena.data(copying: $0) }))
        }
        messages.shuffle()
        let halves = [Array(messages[..<1500]), Array(messages[1500...])]
        messages.removeAll()
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for half in halves {
                group.addTask {
                    var mismatches = 0
                    for (index, data) in half where Array(data) != Self.payload(index, count: data.count) {
                        mismatches += 1
                    }
                    return mismatches
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("a payload from a block behaves as any Data: zero-based, mutable, growable without touching its neighbours")
    func behavesAsData() {
        let arena = PayloadArena()
        arena.isEnabled = true
        var first = [UInt8](repeating: 1, count: 64).withUnsafeBytes { arena.data(copying: $0) }
        let second = [UInt8](repeating: 2, count: 64).withUnsafeBytes { arena.data(copying: $0) }
        #expect(first.startIndex == 0)
        #expect(first[0] == 1)
        first[63] = 9
        first.append(contentsOf: [7, 7, 7])
        #expect(first.count == 67)
        #expect(first[63] == 9 && first[66] == 7)
        #expect(second == Data(repeating: 2, count: 64), "the neighbouring payload is untouched")
        let copy = first
        first[0] = 5
        #expect(copy[0] == 1, "copy on write")
    }

    @Test("payloads too short or too long for a block are ordinary Data")
    func sizesOutsideTheBlocks() {
        let arena = PayloadArena()
        arena.isEnabled = true
        for count in [0, 1, 14, 513, 4096] {
            let bytes = Self.payload(count, count: count)
            let data = bytes.withUnsafeBytes { arena.data(copying: $0) }
            #expect(Array(data) == bytes)
        }
    }
}
