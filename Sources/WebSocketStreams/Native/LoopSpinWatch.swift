/// Catches a service loop that spins: an `lws_service` pass that made no progress
/// (ran no posted work or job, and its callbacks read, wrote and ended nothing) followed
/// at once by another such pass.
///
/// One empty pass is normal (a wake-up whose work already ran, a timer re-armed); a second
/// one right behind it means the loop will keep returning without waiting, at 100% CPU,
/// as it did when lws held decrypted TLS bytes while reading was paused. Debug builds feed
/// every pass to one of these (``ServiceThread/spinningPasses``); tests assert it stays 0.
///
/// A pure value: the caller gives it the time.
struct LoopSpinWatch {
    /// Two empty passes closer than this are back to back: an idle loop waits far longer
    /// (in `poll`) between passes.
    static let backToBack: Duration = .milliseconds(1)

    private var lastEmptyPassEnd: ContinuousClock.Instant?
    /// Empty passes that came right behind another one.
    private(set) var spinningPasses = 0

    /// A pass ended; returns whether it was a spinning one.
    mutating func passEnded(madeProgress: Bool, at now: ContinuousClock.Instant) -> Bool {
        guard !madeProgress else {
            lastEmptyPassEnd = nil
            return false
        }
        defer { lastEmptyPassEnd = now }
        guard let last = lastEmptyPassEnd, now - last < Self.backToBack else { return false }
        spinningPasses += 1
        return true
    }
}
