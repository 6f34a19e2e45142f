import BenchmarkKit
import Synchronization
import WebSocketStreams

/// Many connections opened the way a client opening many should (at most `inflight`
/// handshakes under way, not a thousand child tasks at once), and what that took: shared
/// by W5 and W7.
struct ConnectionBatch {
    var open: [WebSocket] = []
    /// The first connect that failed, in words.
    var failure: String?
    var elapsed: Duration = .zero
    /// Resident memory before the first connect and once all were open.
    var residentBefore = 0
    var residentAfter = 0

    /// Resident memory each open connection added.
    var residentPerConnection: Double {
        open.isEmpty ? 0 : Double(residentAfter - residentBefore) / Double(open.count)
    }

    /// Opens and closes one connection on every loop first, so the loops' contexts and the
    /// runtime's one-time allocations are in the baseline (as lws's context is in
    /// wsbench-c's). Throws what a warm-up connect threw.
    static func warmUp(_ parameters: BenchmarkParameters) async throws {
        for loop in parameters.loops {
            let connection = try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: loop)
            await connection.close()
        }
    }

    /// Opens `target` connections, `parameters.inflight` handshakes at a time.
    static func open(_ target: Int, _ parameters: BenchmarkParameters) async -> ConnectionBatch {
        var batch = ConnectionBatch()
        batch.open.reserveCapacity(target)
        batch.residentBefore = ProcessResources.residentKilobytes()
        let start = ContinuousClock.now
        await withTaskGroup(of: Result<WebSocket, any Error>.self) { group in
            var started = 0
            func startOne() {
                started += 1
                group.addTask {
                    do {
                        return .success(try await WebSocket.connect(
                            to: parameters.url, configuration: parameters.configuration, eventLoop: parameters.nextLoop()))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            while started < min(max(1, parameters.inflight), target) { startOne() }
            for await result in group {
                switch result {
                case .success(let connection): batch.open.append(connection)
                case .failure(let error): batch.failure = batch.failure ?? "connect failed: \(error)"
                }
                if started < target { startOne() }
            }
        }
        batch.elapsed = .now - start
        batch.residentAfter = ProcessResources.residentKilobytes()
        return batch
    }

    /// Closes every open connection at once, waiting for each close handshake.
    ///
    /// One unstructured task per close, counted down, rather than a task group: the Swift
    /// runtime finds a finished child in its group's list by walking it, so 15,000 children
    /// cost the harness O(n²) (5% of the machine while closing, measured).
    func closeAll() async {
        guard !open.isEmpty else { return }
        let remaining = CloseCountdown(open.count)
        await withCheckedContinuation { (allClosed: CheckedContinuation<Void, Never>) in
            remaining.whenDone = allClosed
            for connection in open {
                Task {
                    await connection.close()
                    remaining.oneClosed()
                }
            }
        }
    }
}

/// Counts closes down and resumes the waiter at zero.
private final class CloseCountdown: Sendable {
    private let count: Atomic<Int>
    // nonisolated(unsafe): written once before any close task starts, read by the last.
    nonisolated(unsafe) var whenDone: CheckedContinuation<Void, Never>?

    init(_ count: Int) {
        self.count = Atomic(count)
    }

    func oneClosed() {
        if count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { whenDone?.resume() }
    }
}
