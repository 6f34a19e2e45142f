import SynchronizationSupport

extension ClientConnection {
    /// The transport reached the open phase (loop thread): counts the connection as
    /// opened and records how long the handshake took. A hook in ``ClientTransport``.
    func recordOpened(timings: WebSocketConnectTimings) {
        metrics?.opened(at: .now, timings: timings)
    }

    /// The transport ended (loop thread, after the state machine closed): a connection
    /// that had opened is counted as closed with its code, and its share of the send-queue
    /// meter goes back to zero. A hook in ``ClientTransport``.
    func recordEnded(wasOpen: Bool) {
        guard let metrics, wasOpen else { return }
        let (ending, sendQueueChange) = machine.withLock { ($0.ending, $0.takeSendQueueChange()) }
        metrics.sendQueueChanged(by: sendQueueChange)
        metrics.closed(code: ending?.closeCode ?? .abnormalClosure, initiator: ending?.initiator ?? .connectionLost)
    }
}
