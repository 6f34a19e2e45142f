import WebSocketCore

extension ConnectionStateMachine {
    enum CloseAction {
        case wait(wake: Bool, failedSenders: [OutboundQueue.Sender])
        case done
    }

    /// `close(code:reason:)`: queue the close frame behind the messages already accepted;
    /// senders still waiting for room fail.
    mutating func close(code: WebSocketCloseCode, reason: String, waiter: CloseWaiter) -> CloseAction {
        if isClosed { return .done }
        let wake = startClosing(CloseReason(code: code, reason: reason))
        closeWaiters.append(waiter)
        return .wait(wake: wake, failedSenders: outbound.takeParkedSenders())
    }

    /// Waits for the end without asking for it; `false` when the connection has already ended.
    mutating func awaitEnding(_ waiter: CloseWaiter) -> Bool {
        if isClosed { return false }
        closeWaiters.append(waiter)
        return true
    }

    /// Asks for a close without waiting for it (a loop shutting down, a reconnecting
    /// wrapper moving on); returns whether to wake the loop and the senders that will
    /// never get room.
    mutating func requestClose(code: WebSocketCloseCode, reason: String) -> (wake: Bool, failedSenders: [OutboundQueue.Sender]) {
        (startClosing(CloseReason(code: code, reason: reason)), outbound.takeParkedSenders())
    }

    /// Asks for this side's close frame: an open connection starts closing, and the frame
    /// waits behind the messages accepted before it; while connecting, it is remembered
    /// (and the attempt abandoned). Returns whether to wake the loop.
    mutating func startClosing(_ reason: CloseReason) -> Bool {
        switch state {
        case .connecting(var connecting):
            if connecting.closeRequested == nil {
                connecting.closeRequested = reason
                state = .connecting(connecting)
            }
            return request(.abort)
        case .open:
            let frame = CloseFrame(code: reason.code, reason: reason.reason)
            state = .closing(Closing(local: LocalClose(frame: frame, progress: .queued)))
            // Read again even if the consumer fell behind: the peer's close answer must get in.
            return request([.write, .resumeReading])
        case .closing, .closed:
            return false
        }
    }

    /// What the loop does when the peer's close frame arrives.
    struct PeerClose {
        /// The answer to write now, ahead of any message not started (RFC 6455 5.5.1: the
        /// same code), unless this side's own close frame is already with the writer.
        var answer: CloseFrame?
        var failedSenders: [OutboundQueue.Sender]
        var error: WebSocketError
        /// Both close frames are done: end the TLS session too (close_notify).
        var endsTLS: Bool
    }

    /// The peer sent a close frame.
    mutating func peerClosed(_ frame: CloseFrame, now: ContinuousClock.Instant) -> PeerClose {
        var closing: Closing
        switch state {
        case .open: closing = Closing()
        case .closing(let current): closing = current
        case .connecting, .closed: return PeerClose(failedSenders: [], error: closedError, endsTLS: false)
        }
        closing.peer = CloseReason(code: frame.code ?? .noStatusReceived, reason: frame.reason)
        if closing.initiator == nil { closing.initiator = .peer }
        var answer: CloseFrame?
        if closing.local.map({ $0.progress == .queued }) ?? true {
            answer = CloseFrame(code: frame.code)
            closing.local = LocalClose(frame: answer!, progress: .taken)
        }
        // Bounded even if the answer cannot get out (a peer that stopped reading).
        state = .closing(closing)
        moveCloseDeadline(.closeTimeout, now: now)
        let endsTLS = closeProgressed(now: now)
        return PeerClose(answer: answer, failedSenders: takeParkedSendersIfClosing(), error: closedError, endsTLS: endsTLS)
    }

    /// This side's close frame is whole on the wire: the frame (for the wire-event
    /// observer) and whether the TLS session ends now too; `nil` if it was already reported.
    mutating func closeFrameWritten(now: ContinuousClock.Instant) -> (frame: CloseFrame, endsTLS: Bool)? {
        guard case .closing(var closing) = state, var local = closing.local, local.progress != .written else { return nil }
        local.progress = .written
        closing.local = local
        state = .closing(closing)
        return (local.frame, closeProgressed(now: now))
    }

    /// After a close frame went out or came in: once both have (or this side failed the
    /// connection and its frame is out), wait briefly for the server to end TCP (RFC 6455
    /// 7.1.1), longer while it is still sending. Returns whether the TLS session ends.
    private mutating func closeProgressed(now: ContinuousClock.Instant) -> Bool {
        guard case .closing(var closing) = state, closing.isHandshakeDone else { return false }
        if closing.lingerLimit == nil { closing.lingerLimit = now + timing.closeTimeout }
        state = .closing(closing)
        moveCloseDeadline(.linger, now: now)
        return closing.peer != nil
    }

    /// How the loop fails the connection from this side.
    struct Failing {
        var failure: ProtocolFailure
        var error: WebSocketError
        /// The close frame to write now, ahead of anything not yet started (`nil` when this
        /// side's close frame is already with the writer, or queued behind the messages
        /// accepted before the failure: see ``fail(_:now:behindQueuedMessages:)``).
        var closeFrame: CloseFrame?
        var failedSenders: [OutboundQueue.Sender]
    }

    /// Fails the connection because `failure` broke a rule: its close frame goes out ahead
    /// of anything not started, nothing more is read, and the socket is dropped shortly
    /// after the frame is out if the peer has not ended TCP by then.
    ///
    /// `behindQueuedMessages`: a failure held for the consumer (``protocolFailure(_:now:)``)
    /// is applied once the consumer is done with the messages before it, and what it sent
    /// meanwhile (its replies to them, the reason the failure was held) goes out first: the
    /// close frame is queued behind the messages accepted so far, not written ahead of them.
    mutating func fail(
        _ failure: ProtocolFailure, now: ContinuousClock.Instant, behindQueuedMessages: Bool = false
    ) -> Failing {
        let error: WebSocketError = if failure.exceedsFragmentLimit {
            WebSocketError(code: .messageTooLarge, reason: failure.reason, closeCode: .messageTooBig, closeReason: "")
        } else if failure.code == .messageTooBig {
            .messageTooLarge(limit: timing.maxMessageSize)
        } else {
            .protocolViolation(closeCode: failure.code, reason: failure.reason)
        }
        let frame = failed(with: error, closeCode: failure.code, reason: failure.reason, behindQueuedMessages: behindQueuedMessages)
        // A close queued behind replies gets the close timeout to go out, as a user's close
        // behind queued messages does; the short linger starts once it is on the wire.
        moveCloseDeadline(behindQueuedMessages ? .closeTimeout : .failing, now: now)
        return Failing(failure: failure, error: error, closeFrame: frame, failedSenders: takeParkedSendersIfClosing())
    }

    /// The connection ends because of `error` (too large, pong timeout, invalid data);
    /// `closeCode` is what this side sends, or nil when the socket is just dropped.
    /// Returns the close frame to write now, if this side had none with the writer yet.
    /// With `behindQueuedMessages`, the frame waits behind the queued messages (`nil` is returned).
    @discardableResult
    mutating func failed(
        with error: WebSocketError, closeCode: WebSocketCloseCode?, reason: String = "", behindQueuedMessages: Bool = false
    ) -> CloseFrame? {
        var closing: Closing
        switch state {
        case .open: closing = Closing()
        case .closing(let current): closing = current
        case .connecting, .closed: return nil
        }
        if closing.failure == nil { closing.failure = error }
        if closing.initiator == nil { closing.initiator = .local }
        var frame: CloseFrame?
        if let closeCode {
            if closing.local.map({ $0.progress == .queued }) ?? true {
                let closeFrame = CloseFrame(code: closeCode, reason: reason)
                if behindQueuedMessages {
                    // `takeWrites` hands it out once the queue is empty, and the writer
                    // writes it behind the messages it already holds.
                    closing.local = LocalClose(frame: closeFrame, progress: .queued, failsConnection: true)
                } else {
                    frame = closeFrame
                    closing.local = LocalClose(frame: closeFrame, progress: .taken, failsConnection: true)
                }
            } else {
                closing.local?.failsConnection = true
            }
        }
        state = .closing(closing)
        return frame
    }

    // MARK: - The end

    /// Everything to resume or fail when the transport is gone.
    struct Finale {
        var connectWaiter: ConnectWaiter?
        var connectError: WebSocketError?
        var consumers: [InboundQueue.Consumer] = []
        var parkedSenders: [OutboundQueue.Sender] = []
        var pings: [PingWaiter] = []
        var closeWaiters: [CloseWaiter] = []
        var error: WebSocketError = .closed(code: .abnormalClosure, reason: "")
    }

    /// The socket is gone (closed, dropped, or destroyed), or the handshake failed
    /// (`connectError`). Returns `nil` when already closed.
    ///
    /// - Parameters:
    ///   - unwritten: Messages the loop had taken from the queue but not finished writing,
    ///     or written and never acknowledged by the peer's TCP; they count as unsent,
    ///     ahead of those still queued.
    ///   - abnormalEnd: Why the socket went when no close frame was exchanged (a reset, a
    ///     truncated TLS stream, TCP closed): it becomes the ending's error then.
    ///   - closeFrameAcknowledged: `false` when this side's close frame was written but the
    ///     peer's TCP never acknowledged it: without the peer's close, the close did not happen.
    mutating func transportClosed(
        unwritten: [WebSocketMessage] = [], abnormalEnd: WebSocketError? = nil, closeFrameAcknowledged: Bool = true,
        connectError: WebSocketError? = nil
    ) -> Finale? {
        var finale = Finale()
        var code = WebSocketCloseCode.abnormalClosure
        var reason = ""
        let error: WebSocketError?
        let initiator: WebSocketEnding.Initiator
        switch state {
        case .closed:
            return nil
        case .connecting(let connecting):
            // Lost, unless this side had asked to close (a 1006 without an error then).
            error = connectError ?? (connecting.closeRequested == nil ? abnormalEnd : nil)
            initiator = connecting.closeRequested != nil ? .local : .connectionLost
            finale.connectWaiter = connecting.waiter
            finale.connectError = error ?? .connectionFailed("the connection closed during the opening handshake")
        case .open:
            error = abnormalEnd
            initiator = .connectionLost
        case .closing(let closing):
            if let peer = closing.peer {
                (code, reason) = (peer.code, peer.reason)
            } else if let local = closing.local, local.progress == .written, closeFrameAcknowledged {
                // Only a close frame that left whole counts: one still with the writer (the
                // peer stopped reading) never reached the peer, as an unacknowledged one did not.
                (code, reason) = (local.code, local.reason)
            }
            // Without a close exchanged, the connection was lost, unless this side had asked
            // to close (its close frame never got out, or never reached the peer's TCP).
            error = closing.failure ?? (code == .abnormalClosure && closing.local == nil ? abnormalEnd : nil)
            initiator = closing.initiator ?? (closing.local != nil ? .local : .connectionLost)
        }
        finale.error = error ?? .closed(code: code, reason: reason)
        finale.consumers = inbound.takeConsumers().elementsAsArray
        let drained = outbound.drain()
        finale.parkedSenders = drained.parked
        finale.pings = pings.waiting.compactMap(\.waiter)
        pings.waiting = []
        finale.closeWaiters = closeWaiters
        closeWaiters = []
        keepalive = nil
        deferredFailure = nil
        state = .closed(WebSocketEnding(
            initiator: initiator, closeCode: code, closeReason: reason, error: error,
            unsentMessages: unwritten + drained.unsent))
        return finale
    }
}
