import CLibWebSockets
import FoundationEssentials
import Logging
import SynchronizationSupport

extension ClientTransport {
    /// One chunk of a data message arrived (`LWS_CALLBACK_CLIENT_RECEIVE`).
    ///
    /// A message that fits in one chunk (the common case) is built straight from lws's
    /// buffer: one copy, no intermediate buffer. Longer messages are assembled; text is
    /// validated chunk by chunk so invalid UTF-8 fails the connection at once (1007).
    func receive(_ connection: ClientConnection, input: UnsafeMutableRawPointer?, length: Int, loop: ClientLoop) -> Int32 {
        guard !failing, let wsi else { return failing ? -1 : 0 }
        let chunk = UnsafeRawBufferPointer(start: length > 0 ? input : nil, count: length)
        if pingInFlight != nil { receivedWhilePinging = .now }
        let isFinal = lws_is_final_fragment(wsi) != 0
        let limit = configuration.maxMessageSize

        if partial == nil {
            let isBinary = lws_frame_is_binary(wsi) != 0
            if isFinal {
                guard length <= limit else { return fail(connection, tooLarge: limit) }
                if isBinary {
                    return deliver(connection, loop, .binary(Data(chunk)))
                }
                guard let text = String(validating: chunk.bindMemory(to: UInt8.self), as: UTF8.self) else {
                    return failInvalidUTF8(connection)
                }
                return deliver(connection, loop, .text(text))
            }
            let expected = min(limit, length + Int(lws_remaining_packet_payload(wsi)))
            if isBinary {
                var data = Data()
                data.reserveCapacity(expected)
                partial = .binary(data)
            } else {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(expected)
                partial = .text(bytes, UTF8Validator())
            }
            partialSize = 0
        }

        partialSize += length
        guard partialSize <= limit else { return fail(connection, tooLarge: limit) }
        switch partial {
        case .binary(var data):
            partial = nil  // keep the buffer uniquely referenced while appending
            data.append(contentsOf: chunk)
            if isFinal { return deliver(connection, loop, .binary(data)) }
            partial = .binary(data)
        case .text(var bytes, var validator):
            partial = nil
            guard validator.validate(chunk) else { return failInvalidUTF8(connection) }
            bytes.append(contentsOf: chunk)
            if isFinal {
                guard validator.isComplete else { return failInvalidUTF8(connection) }
                return deliver(connection, loop, .text(String(decoding: bytes, as: UTF8.self)))
            }
            partial = .text(bytes, validator)
        case nil:
            break
        }
        return 0
    }

    /// Hands a complete message to the state machine. A waiting consumer is resumed after
    /// this lws pass (``ClientLoop/deliverAfterTurn(_:_:)``), so the rest of the pass's
    /// messages are already queued when it runs: one wake-up per pass, not per message.
    private func deliver(_ connection: ClientConnection, _ loop: ClientLoop, _ message: WebSocketMessage) -> Int32 {
        partial = nil
        switch connection.machine.withLock({ $0.receive(message) }) {
        case .deliver(let consumer, let message):
            loop.deliverAfterTurn(consumer, message)
        case .pauseReading:
            if let wsi, !readingPaused {
                readingPaused = true
                lws_rx_flow_control(wsi, 0)
                // Pongs cannot be read either: stop the keep-alive until reading resumes,
                // or a healthy peer behind a slow consumer would look dead.
                if !closeTimerArmed { lws_set_timer_usecs(wsi, LWS_SET_TIMER_USEC_CANCEL) }
            }
        case .none:
            break
        }
        return 0
    }

    private func fail(_ connection: ClientConnection, tooLarge limit: Int) -> Int32 {
        connection.logger.debug("incoming message exceeds maxMessageSize (\(limit) bytes); closing with 1009")
        return fail(connection, error: .messageTooLarge(limit: limit), code: .messageTooBig, reason: "message too big")
    }

    private func failInvalidUTF8(_ connection: ClientConnection) -> Int32 {
        connection.logger.debug("text message is not valid UTF-8; closing with 1007")
        let reason = "invalid UTF-8 in a text message"
        return fail(connection, error: .closed(code: .invalidFramePayloadData, reason: reason),
                    code: .invalidFramePayloadData, reason: reason)
    }

    /// Fails the connection from this side: sends a close frame with `code` and drops
    /// whatever else arrives.
    func fail(_ connection: ClientConnection, error: WebSocketError, code: WebSocketCloseCode, reason: String) -> Int32 {
        failing = true
        partial = nil
        let senders = connection.machine.withLock { machine in
            machine.failed(with: error, closeCode: code, reason: reason)
            return machine.takeParkedSendersIfClosing()
        }
        for sender in senders { sender.resume(throwing: error) }
        if let wsi { sendClose(wsi, code: code, reason: reason) }
        return -1
    }

    /// Sets the close frame lws sends when the callback returns -1.
    func sendClose(_ wsi: OpaquePointer, code: WebSocketCloseCode, reason: String) {
        configuration.controlFrameObserver?(.closeSent(code: code, reason: reason))
        var reason = reason
        reason.withUTF8 { bytes in
            wss_close_reason(wsi, UInt32(code.rawValue), bytes.baseAddress, bytes.count)
        }
    }
}
