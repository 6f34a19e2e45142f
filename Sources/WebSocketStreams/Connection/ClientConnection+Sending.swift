import DequeModule
import Synchronization
import SynchronizationSupport

/// What a user task sends: messages (written by the task itself when it may, else queued
/// for the loop) and pings.
extension ClientConnection {
    nonisolated(nonsending)
    func send(_ message: WebSocketMessage, options: SendOptions = .default) async throws {
        let message = OutgoingMessage(message: message, options: options)
        let started = DirectWriter.monotonicNanoseconds()
        defer { writeSide.lastSendReturned.store(DirectWriter.monotonicNanoseconds(), ordering: .relaxed) }
        if writeSide.mayTryDirectWrite(startedAt: started), try writeDirectly(message) {
            return
        }
        try await enqueue(message)
    }

    /// Queues `message` for the loop, waiting for room (and, unless it is a streamed
    /// message's later piece, for a stream in progress to finish).
    nonisolated(nonsending)
    func enqueue(_ message: OutgoingMessage) async throws {
        switch machine.withLock({ $0.send(message) }) {
        case .accepted(let wake):
            if wake { self.wake() }
            return
        case .fail(let error):
            throw error
        case .mustWait:
            break
        }
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        defer { machine.withLock { $0.senderFinished(id: id) } }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                switch machine.withLock({ $0.park(sender: id, message: message, continuation: continuation) }) {
                case .parked:
                    break
                case .resume(let sender, let wake):
                    if wake { self.wake() }
                    sender.resume()
                case .fail(let sender, let error):
                    sender.resume(throwing: error)
                }
            }
        } onCancel: {
            machine.withLock { $0.cancelSender(id: id) }?.resume(throwing: CancellationError())
        }
    }

    /// Writes `message` to the socket on the caller's thread, without waking the loop, when
    /// that cannot reorder anything (see ``DirectWriter``); `false` when it must be queued.
    /// Never waits: a loop that is writing holds the lock, and then the message is queued.
    private func writeDirectly(_ message: OutgoingMessage) throws(WebSocketError) -> Bool {
        guard let outcome = writeSide.writeDirectly(message, machine: machine) else {
            writeSide.directWritesMissed.add(1, ordering: .relaxed)
            return false
        }
        switch outcome {
        case .notTaken:
            return false
        case .sent:
            wroteDirectly(message.message)
            return true
        case .partial:
            wroteDirectly(message.message)
            if machine.withLock({ $0.requestWritePass() }) { wake() }
            return true
        case .failed(let reason):
            // The loop ends the connection; this message is the one that did not go.
            if machine.withLock({ $0.requestWritePass() }) { wake() }
            throw .connectionFailed("write failed: \(reason) (\(transport.target.description))")
        }
    }

    private func wroteDirectly(_ message: WebSocketMessage) {
        bytesWritten.add(message.byteCount, ordering: .relaxed)
        if let metrics {
            var tally = FrameWriter.WrittenTally()
            tally.bytes = message.byteCount
            if case .text = message { tally.textMessages = 1 } else { tally.binaryMessages = 1 }
            metrics.sent(tally)
        }
    }

    // MARK: - Ping

    func ping(payload: [UInt8]? = nil) async throws -> Duration {
        if let payload, payload.count > 125 {
            throw WebSocketError.invalidConfiguration("a ping payload is at most 125 bytes (this one is \(payload.count))")
        }
        let id = waiterIDs.add(1, ordering: .relaxed).newValue
        defer { machine.withLock { $0.pingFinished(id: id) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Duration, any Error>) in
                switch machine.withLock({ $0.ping(id: id, payload: payload, waiter: continuation) }) {
                case .wait(let wake):
                    if wake { self.wake() }
                case .fail(let waiter, let error):
                    waiter.resume(throwing: error)
                }
            }
        } onCancel: {
            machine.withLock { $0.cancelPing(id: id) }?.resume(throwing: CancellationError())
        }
    }
}
