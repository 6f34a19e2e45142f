import Glibc

/// The deadlines of one loop's sockets, nearest first, kept in a binary heap: arming,
/// re-arming and expiring cost O(log n) whatever the number of sockets. (lws 4.1.6 keeps
/// its timers in a sorted list, and inserting into it walks the list: at 15,000
/// connections, 100 to 300 µs per arm.)
///
/// Each socket has at most one deadline; arming again replaces it. A replaced or
/// disarmed deadline stays in the heap, marked stale by its token, until it reaches the
/// top or the heap is rebuilt. Loop thread only.
package struct LoopTimers {
    private struct Entry {
        var deadline: UInt64
        var key: OpaquePointer
        var token: UInt64
    }

    private var heap: [Entry] = []
    /// The token of each armed socket's live entry.
    private var armed: [OpaquePointer: UInt64] = [:]
    private var nextToken: UInt64 = 0

    package init() {}

    /// Monotonic nanoseconds, the clock deadlines are kept in.
    package static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Sets `key`'s deadline (monotonic nanoseconds), replacing any it had.
    package mutating func arm(_ key: OpaquePointer, at deadline: UInt64) {
        nextToken &+= 1
        armed[key] = nextToken
        push(Entry(deadline: deadline, key: key, token: nextToken))
        if heap.count > 2 * armed.count + 1024 { rebuild() }
    }

    /// Forgets `key`'s deadline (and the socket, once it is gone).
    package mutating func disarm(_ key: OpaquePointer) {
        armed.removeValue(forKey: key)
    }

    /// The nearest live deadline, if any.
    package mutating func nearest() -> UInt64? {
        dropStaleTop()
        return heap.first?.deadline
    }

    /// Removes the sockets whose deadline is at or before `now`, appending them to `due` in
    /// deadline order. Each is disarmed: a socket that wants another deadline arms again.
    package mutating func takeDue(now: UInt64, into due: inout [OpaquePointer]) {
        while true {
            dropStaleTop()
            guard let top = heap.first, top.deadline <= now else { return }
            armed.removeValue(forKey: top.key)
            popTop()
            due.append(top.key)
        }
    }

    private func isLive(_ entry: Entry) -> Bool {
        armed[entry.key] == entry.token
    }

    private mutating func dropStaleTop() {
        while let top = heap.first, !isLive(top) { popTop() }
    }

    private mutating func rebuild() {
        let armed = armed
        heap.removeAll { armed[$0.key] != $0.token }
        guard heap.count > 1 else { return }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            let right = left + 1
            let child = right < heap.count && heap[right].deadline < heap[left].deadline ? right : left
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            parent = child
        }
    }
}
