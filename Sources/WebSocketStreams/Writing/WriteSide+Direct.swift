import SynchronizationSupport

extension WriteSide {
    /// A task writes `message` to the socket itself when that cannot reorder anything (see
    /// ``DirectWriter``). `nil` when the loop holds the lock (it is writing: the message is
    /// queued then, never waited for); ``DirectWriter/Outcome/notTaken`` when the message
    /// must be queued for another reason. Lock order: this lock, then the machine's.
    func writeDirectly(
        _ message: OutgoingMessage, machine: borrowing AnnotatedMutex<ConnectionStateMachine>
    ) -> DirectWriter.Outcome? {
        state.withLockIfAvailable { state in
            guard state.direct.mayWrite(message), machine.withLock({ $0.mayWriteDirectly }) else { return .notTaken }
            return state.writeDirectly(message.message)
        }
    }
}

extension WriteSide.State {
    /// Writes `message` as one frame, counts it in the stream and records it in the ledger.
    fileprivate mutating func writeDirectly(_ message: WebSocketMessage) -> DirectWriter.Outcome {
        let descriptor = direct.descriptor
        let (outcome, produced) = direct.write(message, pending: &pending)
        if case .failed(let reason) = outcome {
            failure = reason
            return outcome
        }
        streamBytes += produced
        if tracksDelivery {
            // What the socket did not take is in `pending`, still ahead of anything written later.
            ledger.record(message, endingAt: streamBytes)
            forgetAcknowledged(on: descriptor)
        }
        return outcome
    }
}
