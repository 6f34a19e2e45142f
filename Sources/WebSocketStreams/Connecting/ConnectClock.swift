/// Times the opening handshake's phases as the transport moves through them: each
/// `…Started` notes when a phase began, each `…Finished` what it took, into
/// ``WebSocketConnectTimings``.
///
/// Made by the connecting task, then used only by the transport on the loop's thread, which
/// lets go of it once the connection is open (the timings move to the state machine): an
/// open connection does not carry it.
final class ConnectClock {
    /// What is measured so far (name resolution and a race's TCP connect arrive already measured).
    private(set) var timings: WebSocketConnectTimings
    /// When `connect` was called: ``WebSocketConnectTimings/total`` runs from here.
    let startedAt: ContinuousClock.Instant
    /// When the phase under way began.
    private var phaseStart: ContinuousClock.Instant
    /// Whether the TCP connect is timed here (not already by the address race).
    private var timesTCP = true

    init(timings: WebSocketConnectTimings, startedAt: ContinuousClock.Instant) {
        self.timings = timings
        self.startedAt = startedAt
        phaseStart = startedAt
    }

    /// The socket's connect starts (`connected`: the address race already connected it).
    func tcpStarted(to endpoint: SocketConnector.Endpoint, now: ContinuousClock.Instant = .now) {
        phaseStart = now
        switch endpoint {
        case .tcp: timings.remoteAddress = endpoint.description
        case .connected(let socket):
            timings.remoteAddress = socket.description
            timesTCP = false
        case .unix: break
        }
    }

    /// TCP is up.
    func tcpFinished(now: ContinuousClock.Instant = .now) {
        if timesTCP { timings.tcpConnect = now - phaseStart }
        phaseStart = now
    }

    /// The proxy opened its tunnel (it began when TCP was up).
    func proxyFinished(now: ContinuousClock.Instant = .now) {
        timings.proxyTunnel = now - phaseStart
        phaseStart = now
    }

    /// The TLS handshake begins.
    func tlsStarted(now: ContinuousClock.Instant = .now) {
        phaseStart = now
    }

    /// The TLS handshake is done.
    func tlsFinished(resumed: Bool, now: ContinuousClock.Instant = .now) {
        timings.tlsHandshake = now - phaseStart
        timings.isTLSSessionResumed = resumed
        phaseStart = now
    }

    /// The upgrade request goes out.
    func upgradeStarted(now: ContinuousClock.Instant = .now) {
        phaseStart = now
    }

    /// The server's `101` was accepted: the connection is open.
    func opened(now: ContinuousClock.Instant = .now) {
        timings.upgrade = now - phaseStart
        timings.total = now - startedAt
    }
}
