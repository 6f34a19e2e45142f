/// The reconnect supervisor's view of time, on the clock the user gave
/// ``ReconnectingWebSocket``: how long the socket has existed, and sleeping through a
/// backoff delay. Tests inject a clock they advance by hand, so backoff needs no real sleep.
protocol ReconnectTiming: Sendable {
    /// Time elapsed on the clock since the socket was created.
    func elapsed() -> Duration
    /// Sleeps `duration` on the clock; throws `CancellationError` if cancelled first.
    func sleep(for duration: Duration) async throws
}

/// ``ReconnectTiming`` over any `Clock` measured in `Duration`.
struct ClockTiming<C: Clock>: ReconnectTiming where C.Duration == Duration {
    let clock: C
    let origin: C.Instant

    init(_ clock: C) {
        self.clock = clock
        origin = clock.now
    }

    func elapsed() -> Duration {
        origin.duration(to: clock.now)
    }

    func sleep(for duration: Duration) async throws {
        try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
    }
}

/// Wraps `clock` (opened from an existential) as ``ReconnectTiming``.
func reconnectTiming<C: Clock>(_ clock: C) -> any ReconnectTiming where C.Duration == Duration {
    ClockTiming(clock)
}
