extension ConnectionStateMachine {
    enum ConnectAction {
        case wait
        case resume(ConnectWaiter, throwing: (any Error)?)
    }

    /// `connect` waits for the handshake.
    mutating func awaitConnect(_ waiter: ConnectWaiter) -> ConnectAction {
        switch state {
        case .connecting(var connecting):
            if connecting.cancelled { return .resume(waiter, throwing: CancellationError()) }
            connecting.waiter = waiter
            state = .connecting(connecting)
            return .wait
        case .open:
            return .resume(waiter, throwing: nil)
        case .closing, .closed:
            return .resume(waiter, throwing: closedError)
        }
    }

    /// Whether nobody wants the connection being opened any more (its `connect` was
    /// cancelled, or a close was asked for before it opened).
    var isAbandoningConnect: Bool {
        if case .connecting(let connecting) = state { return connecting.isAbandoned }
        return false
    }

    /// The caller gave up on the handshake: its waiter (to resume with `CancellationError`)
    /// and whether to wake the loop to drop the half-open connection.
    mutating func cancelConnect() -> (waiter: ConnectWaiter?, wake: Bool) {
        guard case .connecting(var connecting) = state else { return (nil, false) }
        let waiter = connecting.waiter
        connecting.waiter = nil
        connecting.cancelled = true
        state = .connecting(connecting)
        return (waiter, request(.abort))
    }

    /// The upgrade request of an abandoned attempt is out: its answer is waited for until
    /// `deadline` (bounded by the handshake's own), so an upgrade that completes meanwhile
    /// is closed properly with 1001 instead of dropped. Returns when the timer must fire.
    mutating func waitForAbandonedUpgrade(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard case .connecting(var connecting) = state else { return nil }
        let deadline = min(now + timing.abandonGrace, connecting.deadline)
        connecting.abandonDeadline = deadline
        state = .connecting(connecting)
        return deadline
    }

    /// The handshake succeeded: the waiter to resume, or, when `connect` was cancelled
    /// meanwhile, nobody (the connection has no owner and goes away with 1001: `wake`).
    /// When a close was asked for while connecting, `connect` fails with `error` and the
    /// connection closes with the code asked for.
    mutating func established(
        subprotocol: String?, extensions: String?, responseHeaders: [String: String] = [:],
        timings: WebSocketConnectTimings = WebSocketConnectTimings(), now: ContinuousClock.Instant = .now
    ) -> (waiter: ConnectWaiter?, wake: Bool, error: WebSocketError?) {
        guard case .connecting(let connecting) = state else { return (nil, false, nil) }
        negotiated = Negotiated(
            subprotocol: subprotocol, extensions: extensions, responseHeaders: responseHeaders, timings: timings)
        keepalive = Keepalive(
            interval: timing.pingInterval, pongTimeout: timing.pongTimeout, mode: timing.pingMode, grid: timing.pingGrid, now: now)
        heartbeat = timing.heartbeat.map { Heartbeat(interval: $0.interval, timeout: $0.timeout, now: now) }
        state = .open
        if connecting.cancelled {
            return (nil, startClosing(CloseReason(code: .goingAway, reason: "")), nil)
        }
        if let abandon = connecting.closeRequested {
            // Closed while connecting (the loop is shutting down): close properly, and
            // `connect` fails instead of handing out a connection that is going away.
            let error = WebSocketError.connectionFailed("the connection was closed before it opened")
            let wake = startClosing(abandon)
            if case .closing(var closing) = state {
                closing.failure = error
                state = .closing(closing)
            }
            return (connecting.waiter, wake, error)
        }
        return (connecting.waiter, false, nil)
    }

    /// The handshake failed; ends the connection with `error`.
    mutating func connectFailed(_ error: WebSocketError) -> Finale? {
        guard case .connecting = state else { return nil }
        return transportClosed(connectError: error)
    }
}
