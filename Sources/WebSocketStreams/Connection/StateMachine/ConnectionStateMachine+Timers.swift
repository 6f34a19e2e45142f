extension ConnectionStateMachine {
    /// When the loop's timer must next fire: the handshake's deadline (and an abandoned
    /// upgrade's) while connecting; keep-alive's next ping or pong deadline while open; the
    /// close's deadline once closing; and a held failure's.
    var nextDeadline: ContinuousClock.Instant? {
        var deadline: ContinuousClock.Instant?
        switch state {
        case .connecting(let connecting):
            deadline = min(connecting.deadline, connecting.abandonDeadline ?? connecting.deadline)
        case .open:
            deadline = Self.earliest(keepalive?.nextDeadline, heartbeat?.nextDeadline)
        case .closing(let closing):
            deadline = closing.deadline ?? keepalive?.nextDeadline
        case .closed:
            return nil
        }
        if let held = deferredFailure?.deadline { deadline = min(held, deadline ?? held) }
        return deadline
    }

    /// The earlier of two optional deadlines.
    private static func earliest(_ a: ContinuousClock.Instant?, _ b: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    /// Whether the pong of the ping in flight is overdue at `now`: the loop then looks for
    /// unread bytes on the socket before ``timerFired(now:unreadInputWaiting:)`` decides.
    func isPongOverdue(at now: ContinuousClock.Instant) -> Bool {
        guard let inFlight = keepalive?.inFlight else { return false }
        return now >= inFlight.deadline
    }

    /// What the loop does when its timer fires.
    enum TimerAction {
        /// Nothing is due yet: arm the timer again.
        case rearm
        /// The handshake ran past `connectTimeout`; `abandoned` when nobody wanted it anyway.
        case handshakeTimedOut(abandoned: Bool)
        /// An abandoned upgrade's answer did not come in time: drop the attempt.
        case abandonedUpgradeExpired
        /// The consumer did not come back in time for a held failure: fail now.
        case fail(Failing)
        /// The close did not finish in time (or the linger after it ended): drop the socket.
        /// `finished` says whether the close frames were exchanged.
        case dropAfterClose(finished: Bool)
        /// Keep-alive: write this ping.
        case sendKeepalivePing(payload: [UInt8])
        /// No pong within `pongTimeout`: drop the connection.
        case pongTimedOut
        /// The application heartbeat is due: send its message.
        case sendHeartbeat
        /// No reply to the heartbeat within its timeout: drop the connection.
        case heartbeatTimedOut
    }

    /// The loop's timer fired at `now`. `unreadInputWaiting` says bytes wait unread on the
    /// socket (asked only when ``isPongOverdue(at:)``): a pong may be among them, so a busy
    /// loop does not mistake a live peer for a dead one.
    mutating func timerFired(now: ContinuousClock.Instant, unreadInputWaiting: Bool = false) -> TimerAction {
        switch state {
        case .connecting(let connecting):
            if now >= connecting.deadline { return .handshakeTimedOut(abandoned: connecting.isAbandoned) }
            return connecting.isAbandoned ? .abandonedUpgradeExpired : .rearm
        case .closed:
            return .rearm
        case .open, .closing:
            break
        }
        if let held = deferredFailure, now >= held.deadline, let failing = applyDeferredFailure(now: now) {
            return .fail(failing)
        }
        if case .closing(let closing) = state, let deadline = closing.deadline {
            return now >= deadline ? .dropAfterClose(finished: closing.isHandshakeDone) : .rearm
        }
        if case .open = state, var heartbeat {
            let action = heartbeat.tick(at: now)
            self.heartbeat = heartbeat
            switch action {
            case .none:
                break
            case .send:
                return .sendHeartbeat
            case .timedOut:
                failed(with: WebSocketError(
                    code: .pongTimeout, reason: "the peer did not reply to the application heartbeat within \(heartbeat.timeout) (WebSocketHeartbeat.timeout)"),
                    closeCode: nil)
                return .heartbeatTimedOut
            }
        }
        guard var keepalive else { return .rearm }
        let action = keepalive.tick(at: now, unreadInputWaiting: unreadInputWaiting)
        defer { self.keepalive = keepalive }
        switch action {
        case .none:
            return .rearm
        case .sendPing:
            let (tag, id) = keepalive.nextKeepalivePayload()
            keepalive.pingSent(tag: tag, id: id, at: now)
            return .sendKeepalivePing(payload: Keepalive.payload(tag: tag, id: id))
        case .timedOut:
            failed(with: .pongTimeout, closeCode: nil)
            return .pongTimedOut
        }
    }
}
