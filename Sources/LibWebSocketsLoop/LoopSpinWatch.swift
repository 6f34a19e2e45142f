/// Catches a service loop that spins: `lws_service` passes that make no progress (run no
/// posted work or job, were not woken by another thread, and whose callbacks read, wrote
/// and ended nothing) repeated back to back.
///
/// One empty pass is normal (an lws housekeeping timer, a timer re-armed), and two of
/// libwebsockets' own timers can fire together. A third empty pass right behind those means
/// the loop keeps returning without waiting, at 100% CPU, as it did when lws held decrypted
/// TLS bytes while reading was paused: every pass from there on is counted. Debug builds
/// feed every pass to one of these (``EventLoopThread/spinningPasses``); tests assert it
/// stays 0, and a busy loop makes it reach thousands within milliseconds.
///
/// A pure value: the caller gives it the time.
struct LoopSpinWatch {
    /// Two empty passes closer than this are back to back: an idle loop waits far longer
    /// (in `poll`) between passes.
    static let backToBack: Duration = .milliseconds(1)
    /// Back-to-back empty passes tolerated before the next one counts as spinning.
    static let toleratedStreak = 2

    private var lastEmptyPassEnd: ContinuousClock.Instant?
    private var streak = 0
    /// Empty passes that came back to back after the tolerated streak.
    private(set) var spinningPasses = 0

    /// A pass ended; returns whether it was a spinning one.
    mutating func passEnded(madeProgress: Bool, at now: ContinuousClock.Instant) -> Bool {
        guard !madeProgress else {
            lastEmptyPassEnd = nil
            streak = 0
            return false
        }
        defer { lastEmptyPassEnd = now }
        if let last = lastEmptyPassEnd, now - last < Self.backToBack {
            streak += 1
        } else {
            streak = 1
        }
        guard streak > Self.toleratedStreak else { return false }
        spinningPasses += 1
        return true
    }
}
