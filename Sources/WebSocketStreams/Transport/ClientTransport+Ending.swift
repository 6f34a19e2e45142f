import SynchronizationSupport
import Logging
import WebSocketCore

extension ClientTransport {
    /// The socket closed (the peer ended TCP, an error, or this side dropped it).
    func socketClosed(_ connection: ClientConnection) {
        if case .connecting = opening.step {
            // Without the socket's reason, `end` reports "could not connect to ...".
            end(connection, connectError: connectFailure())
            return
        }
        if case .upgrading(var answer) = opening.step, let refusal = answer.refusalCutShort(connectionClosed: true) {
            opening.step = .upgrading(answer)
            end(connection, connectError: refusal)
            return
        }
        if isOpen, abnormalEnd == nil { noteAbnormalEnd(reasonForLostConnection()) }
        end(connection, connectError: nil)
    }

    /// Why an open connection's socket closed when no close frame explained it: a reset,
    /// a TLS stream cut inside a record, or the server simply closing TCP. All are
    /// ``WebSocketError/connectionFailed(_:)``: the connection was lost, and may be retried.
    private func reasonForLostConnection() -> WebSocketError {
        if let failure = socket?.pendingError() {
            return .connectionFailed("\(failure) (\(target.description)) without a close frame")
        }
        // While reading is paused, ciphertext waits in TLS on purpose; only an unpaused
        // connection's leftovers are a record cut short.
        if let tls, !reader.isPaused, tls.holdsUnfinishedInput {
            // A connection failure, not a TLS one: the session was fine, the stream was cut
            // (and ReconnectingWebSocket retries it, as any dropped connection).
            return .connectionFailed("the connection ended inside a TLS record: the stream from \(url.hostHeader) was truncated")
        }
        if tls != nil {
            return .connectionFailed(
                "the server closed the connection without a close frame or a TLS close_notify (\(url.hostHeader))")
        }
        return .connectionFailed("the server closed the connection without a close frame (\(target.description))")
    }

    /// Records why the connection is ending without a close handshake (the first reason
    /// wins); it becomes ``WebSocket/error`` unless a close frame came or was sent first.
    func noteAbnormalEnd(_ error: WebSocketError) {
        if abnormalEnd == nil { abnormalEnd = error }
    }

    /// Ends the connection on this side: settles what the peer received, tells the state
    /// machine, and resumes or fails everything still waiting.
    func end(_ connection: ClientConnection, connectError: WebSocketError?) {
        if hasEnded { return }
        connection.writeSide.closeDirectWrites()
        let wasOpen = isOpen
        let error = connectError ?? (wasOpen ? nil : opening.error ?? defaultConnectError)
        opening.step = .ended
        reader = ReadSide()
        // The peer's count of what it acknowledged, read once as the connection ends.
        let acknowledged = wasOpen ? socket.flatMap { RawSocket.acknowledgedByteCount(of: $0.descriptor) } : nil
        let delivery = wasOpen ? connection.writeSide.settle(acknowledged: acknowledged) : WriteSide.Delivery()
        let finale = connection.machine.withLock { machine in
            if let error, !wasOpen { return machine.connectFailed(error) }
            return machine.transportClosed(
                unwritten: delivery.unsent, abnormalEnd: abnormalEnd, closeFrameAcknowledged: delivery.closeFrameAcknowledged)
        }
        connection.recordEnded(wasOpen: wasOpen)  // metrics hook, before the waiters resume
        finale?.run()
    }
}
