import Dispatch
import Glibc
import SynchronizationSupport
import WebSocketStreams

/// Writes to standard output and error on a thread of its own, in the order it was asked to.
///
/// Callers never block: ``enqueue(_:)`` appends to a locked queue and wakes the thread,
/// which does the (possibly blocking) `write` calls. A reader that stops reading (a full
/// pipe) therefore stalls only this thread; ``waitForRoom()`` lets the receiving side slow
/// down instead of buffering without bound.
final class OutputWriter: Sendable {
    /// Bytes for one file descriptor.
    struct Chunk: Sendable {
        var descriptor: Int32
        var bytes: [UInt8]

        init(_ descriptor: Int32, _ text: String) {
            self.descriptor = descriptor
            self.bytes = Array(text.utf8)
        }

        init(_ descriptor: Int32, _ bytes: [UInt8]) {
            self.descriptor = descriptor
            self.bytes = bytes
        }
    }

    private struct State: Sendable {
        var pending: [Chunk] = []
        var pendingBytes = 0
        var isWriting = false
        var drainedWaiters: [CheckedContinuation<Void, Never>] = []
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        /// Descriptors whose reader went away (`EPIPE`); later writes to them are dropped.
        var closedDescriptors: Set<Int32> = []
    }

    /// Unwritten bytes beyond which ``waitForRoom()`` waits.
    static let roomLimit = 1 << 20

    private let state = AnnotatedMutex(State(), rank: .outputQueue)
    private let wakeUp = DispatchSemaphore(value: 0)
    private let onClosed: @Sendable (Int32) -> Void

    /// Starts the writer thread.
    ///
    /// - Parameter onClosed: Called (on the writer thread) when a descriptor's reader has
    ///   gone away, e.g. `wsdump ... | head -1` after `head` exits.
    init(onClosed: @escaping @Sendable (Int32) -> Void) {
        self.onClosed = onClosed
        BlockingThread.run(name: "wsdump-output") { [self] in writeForever() }
    }

    /// Queues `chunks` to be written in order after everything queued before.
    func enqueue(_ chunks: [Chunk]) {
        guard !chunks.isEmpty else { return }
        state.withLock { state in
            state.pending.append(contentsOf: chunks)
            state.pendingBytes += chunks.reduce(0) { $0 + $1.bytes.count }
        }
        wakeUp.signal()
    }

    /// Returns once everything queued so far has been written.
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let drained = state.withLock { state -> Bool in
                if state.pending.isEmpty, !state.isWriting { return true }
                state.drainedWaiters.append(continuation)
                return false
            }
            if drained { continuation.resume() }
        }
    }

    /// Returns once fewer than ``roomLimit`` bytes wait to be written.
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let hasRoom = state.withLock { state -> Bool in
                if state.pendingBytes < Self.roomLimit { return true }
                state.roomWaiters.append(continuation)
                return false
            }
            if hasRoom { continuation.resume() }
        }
    }

    private func writeForever() {
        while true {
            wakeUp.wait()
            while true {
                let batch = state.withLock { state -> [Chunk] in
                    defer { state.pending = [] }
                    state.isWriting = !state.pending.isEmpty
                    return state.pending
                }
                if batch.isEmpty { break }
                for chunk in batch { write(chunk) }
                let written = batch.reduce(0) { $0 + $1.bytes.count }
                let (drained, room) = state.withLock { state in
                    state.pendingBytes -= written
                    state.isWriting = false
                    let room = state.pendingBytes < Self.roomLimit ? state.roomWaiters : []
                    if !room.isEmpty { state.roomWaiters = [] }
                    let drained = state.pending.isEmpty ? state.drainedWaiters : []
                    if !drained.isEmpty { state.drainedWaiters = [] }
                    return (drained, room)
                }
                for waiter in room { waiter.resume() }
                for waiter in drained { waiter.resume() }
            }
        }
    }

    /// Writes all of `chunk`, retrying after interruptions and partial writes.
    private func write(_ chunk: Chunk) {
        let descriptor = chunk.descriptor
        if state.withLock({ $0.closedDescriptors.contains(descriptor) }) { return }
        chunk.bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let result = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if result > 0 {
                    offset += result
                } else if result < 0, errno == EINTR {
                    continue
                } else if result < 0, errno == EAGAIN {
                    var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&waiting, 1, 100)
                } else {
                    state.withLock { _ = $0.closedDescriptors.insert(descriptor) }
                    onClosed(descriptor)
                    return
                }
            }
        }
    }
}
