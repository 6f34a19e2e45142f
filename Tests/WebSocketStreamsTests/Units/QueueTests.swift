import DequeModule
import FoundationEssentials
import Testing
@testable import WebSocketStreams

@Suite("InboundQueue watermarks")
struct InboundQueueTests {
    @Test("pauses at the message limit and resumes at a quarter")
    func messageWatermarks() {
        var queue = InboundQueue(maxMessages: 8, maxBytes: 1_000_000)
        var actions: [InboundQueue.ReceiveAction] = []
        for index in 0..<8 { actions.append(queue.receive(.text("\(index)"))) }
        #expect(actions.dropLast().allSatisfy { if case .buffered = $0 { true } else { false } })
        guard case .bufferedPauseReading = actions.last else {
            Issue.record("the eighth message should pause reading")
            return
        }
        #expect(queue.isReadingPaused)
        var resumedAt: Int?
        for taken in 1...8 {
            guard case .message(let message, let resume) = queue.next() else {
                Issue.record("expected a message")
                return
            }
            #expect(message == .text("\(taken - 1)"))
            if resume { resumedAt = taken }
        }
        #expect(resumedAt == 6)  // 2 left = 8 / 4
        #expect(!queue.isReadingPaused)
    }

    @Test("a consumer's batch trades places with the queue: all of it, in order, and reading resumes")
    func consumerBatch() {
        var queue = InboundQueue(maxMessages: 16, maxBytes: 1_000_000)
        for index in 0..<16 { _ = queue.receive(.text("\(index)")) }
        #expect(queue.isReadingPaused)
        guard case .message(let first, _) = queue.next() else {
            Issue.record("expected a message")
            return
        }
        #expect(first == .text("0"))
        var batch = Deque<WebSocketMessage>()
        let resume = queue.take(into: &batch, limit: queue.consumerBatchLimit - 1)
        #expect(Array(batch) == (1...15).map { .text("\($0)") })
        #expect(queue.count == 0)
        #expect(resume, "the queue is empty: reading resumes while the batch is handled")
        #expect(!queue.isReadingPaused)
        // The queue refills behind the batch; the consumer's next batch takes it.
        for index in 16..<20 { _ = queue.receive(.text("\(index)")) }
        batch.removeAll()
        #expect(!queue.take(into: &batch, limit: 15))
        #expect(Array(batch) == (16..<20).map { .text("\($0)") })
    }

    @Test("a consumer's batch that cannot take everything moves what fits, in order")
    func consumerBatchPartial() {
        var queue = InboundQueue(maxMessages: 100, maxBytes: 4000)
        for index in 0..<8 { _ = queue.receive(.binary(Data(repeating: UInt8(index), count: 400))) }
        var batch = Deque<WebSocketMessage>()
        batch.append(.text("held"))  // the consumer still holds a message: no trade
        #expect(!queue.take(into: &batch, limit: 3))
        #expect(batch.count == 4)
        #expect(batch.last == .binary(Data(repeating: 2, count: 400)))
        #expect(queue.count == 5)
    }

    @Test("pauses at the byte limit")
    func byteWatermark() {
        var queue = InboundQueue(maxMessages: 100, maxBytes: 1000)
        guard case .buffered = queue.receive(.binary(Data(count: 600))) else { Issue.record(); return }
        guard case .bufferedPauseReading = queue.receive(.binary(Data(count: 600))) else { Issue.record(); return }
    }
}

@Suite("OutboundQueue backpressure")
struct OutboundQueueTests {
    @Test("full at the high watermark; a batch takes at least one message")
    func watermarks() {
        var queue = OutboundQueue(highWatermark: 1000)
        #expect(!queue.isFull)
        queue.append(.binary(Data(count: 1500)))  // one big message is accepted into an empty queue
        #expect(queue.isFull)
        var batch: [OutgoingMessage] = []
        var admitted: [OutboundQueue.Sender] = []
        queue.take(budget: 10, into: &batch, admitted: &admitted)
        #expect(batch.count == 1)
        #expect(queue.bytes == 0)
        #expect(!queue.isFull)
    }

    @Test("a sender cancelled before it parks never parks, and its message is not queued")
    func cancelBeforePark() async {
        var queue = OutboundQueue(highWatermark: 10)
        queue.append(.binary(Data(count: 20)))
        #expect(queue.cancel(id: 7) == nil)  // not parked yet: the cancellation is remembered
        var outcome: OutboundQueue.ParkResult?
        do {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                outcome = queue.park(id: 7, message: .text("x"), continuation: continuation)
                switch outcome {
                case .cancelled: continuation.resume(throwing: CancellationError())
                default: continuation.resume()
                }
            }
        } catch {
            #expect(error is CancellationError)
        }
        #expect(outcome == .cancelled)
        #expect(queue.parkedCount == 0)
        #expect(queue.bytes == 20)
    }

    @Test("parked senders are let in, in order, once the queue drains below half")
    func parkedSendersAdmittedInOrder() async throws {
        var queue = OutboundQueue(highWatermark: 100)
        queue.append(.binary(Data(count: 100)))
        var admittedOrder: [Int] = []
        try await withThrowingTaskGroup(of: Void.self) { _ in
            // Park two senders with continuations we resume ourselves below.
            var parked: [(Int, OutboundQueue.Sender)] = []
            for id in [1, 2] {
                try await withUnsafeThrowingContinuation { (outer: UnsafeContinuation<Void, any Error>) in
                    // The sender's own continuation is only used as a token here.
                    let result = queue.park(id: UInt64(id), message: .text("m\(id)"), continuation: outer)
                    #expect(result == .parked)
                    parked.append((id, outer))
                    // Resume now so this test can go on; the queue still holds it as parked.
                    outer.resume()
                }
            }
            #expect(queue.parkedCount == 2)
            var batch: [OutgoingMessage] = []
            var admitted: [OutboundQueue.Sender] = []
            queue.take(budget: 1000, into: &batch, admitted: &admitted)
            #expect(batch.count == 1)
            #expect(admitted.count == 2)
            var next: [OutgoingMessage] = []
            queue.take(budget: 1000, into: &next, admitted: &admitted)
            #expect(next == [.text("m1"), .text("m2")])
            admittedOrder = parked.map(\.0)
        }
        #expect(admittedOrder == [1, 2])
    }
}
