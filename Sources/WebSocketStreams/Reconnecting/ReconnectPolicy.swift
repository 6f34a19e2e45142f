/// When and how often a ``ReconnectingWebSocket`` tries again.
///
/// | Setting | Default | Meaning |
/// |---|---|---|
/// | ``initialDelay`` | 0.5 s | The first retry comes within this delay |
/// | ``multiplier`` | 2 | Each further failed attempt multiplies the delay cap |
/// | ``maxDelay`` | 30 s | The delay cap never exceeds this |
/// | ``maxAttempts`` | unlimited | Consecutive failed attempts before giving up |
/// | ``minimumUptime`` | 5 s | A connection must stay up this long for the attempt count to reset |
/// | ``reconnectAfterNormalClosure`` | `false` | Whether a peer's 1000 close is retried |
/// | ``maxQueuedMessages`` / ``maxQueuedBytes`` | 1,000 / 8 MiB | `send` queue while disconnected |
///
/// Delays use exponential backoff with full jitter: after the n-th consecutive failed
/// attempt the delay is random in `0...min(maxDelay, initialDelay × multiplierⁿ⁻¹)`, so a
/// fleet of clients does not reconnect in lockstep. A server's `Retry-After` (on 429, 503...)
/// is honoured: the delay is at least what it asks for.
///
/// Connections that end before ``minimumUptime`` do not reset the count, so a server that
/// accepts and closes at once sees ever longer pauses, not a reconnect storm.
///
/// ```swift
/// var policy = ReconnectPolicy()
/// policy.maxDelay = .seconds(10)
/// policy.maxAttempts = 20
/// let socket = ReconnectingWebSocket(to: "wss://example.org/feed", policy: policy)
/// ```
///
/// What is retried (``decision(for:uptime:)``): network errors, timeouts, TCP loss (1006),
/// a missed pong, close codes 1001, 1005, 1011, 1012, 1013, 1014 and application codes
/// 3000-4999, HTTP 5xx, 429 and 408, and a proxy answering 5xx. What is fatal: other HTTP
/// 4xx (401, 403, 404...), other proxy refusals (407), TLS failures, an invalid URL or
/// configuration, and close codes 1002, 1003, 1007, 1008, 1009, 1010 and 1015. A 1000
/// close completes the socket unless ``reconnectAfterNormalClosure``.
public struct ReconnectPolicy: Sendable, Hashable {
    /// The cap of the first retry delay. Default 0.5 s.
    public var initialDelay: Duration = .milliseconds(500)
    /// How much the delay cap grows with each consecutive failed attempt. Default 2.
    public var multiplier: Double = 2
    /// The largest delay cap. Default 30 s.
    public var maxDelay: Duration = .seconds(30)
    /// Consecutive failed attempts after which the socket fails; `nil` (the default) never gives up.
    public var maxAttempts: Int?
    /// How long a connection must stay up before the attempt count resets. Default 5 s.
    public var minimumUptime: Duration = .seconds(5)
    /// Whether a peer closing with 1000 (normal closure) is reconnected. Default `false`:
    /// the socket completes.
    public var reconnectAfterNormalClosure = false
    /// Messages `send` may queue while disconnected before it throws
    /// ``WebSocketError/sendQueueFull(messages:bytes:)``. Default 1,000.
    public var maxQueuedMessages = 1000
    /// Bytes `send` may queue while disconnected. Default 8 MiB.
    public var maxQueuedBytes = 8 * 1024 * 1024

    /// A policy; every argument has the default documented above.
    ///
    /// ```swift
    /// let policy = ReconnectPolicy(initialDelay: .milliseconds(200), maxAttempts: 10)
    /// ```
    public init(
        initialDelay: Duration = .milliseconds(500),
        multiplier: Double = 2,
        maxDelay: Duration = .seconds(30),
        maxAttempts: Int? = nil,
        minimumUptime: Duration = .seconds(5),
        reconnectAfterNormalClosure: Bool = false,
        maxQueuedMessages: Int = 1000,
        maxQueuedBytes: Int = 8 * 1024 * 1024
    ) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
        self.minimumUptime = minimumUptime
        self.reconnectAfterNormalClosure = reconnectAfterNormalClosure
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
    }

    /// What the socket does after a connection attempt or connection ended with `error`.
    public enum Decision: Sendable, Hashable {
        /// Try again after a backoff delay of at least `retryAfter` when given.
        case retry(retryAfter: Duration?)
        /// Stop for good with this error.
        case fail
        /// Stop for good: the peer closed normally.
        case complete
    }

    /// Classifies how a connection attempt or a connection ended.
    ///
    /// - Parameters:
    ///   - error: The error the attempt threw, or the connection's end as
    ///     ``WebSocketError/closed(code:reason:)`` (or the error that ended it).
    ///   - uptime: How long the connection had been open; `nil` for a failed attempt.
    public func decision(for error: WebSocketError, uptime: Duration?) -> Decision {
        switch error.code {
        case .connectionFailed, .timedOut, .pongTimeout:
            return .retry(retryAfter: nil)
        case .handshakeRejected:
            switch error.httpStatus ?? 0 {
            case 408, 429, 500...599:
                return .retry(retryAfter: error.header(named: "Retry-After").flatMap(Self.parseRetryAfter))
            default:
                return .fail
            }
        case .proxyRejected:
            return (500...599).contains(error.httpStatus ?? 0) ? .retry(retryAfter: nil) : .fail
        case .closed:
            switch error.closeCode?.rawValue ?? 1006 {
            case 1000:
                return reconnectAfterNormalClosure ? .retry(retryAfter: nil) : .complete
            case 1002, 1003, 1007, 1008, 1009, 1010, 1015:
                return .fail
            default:
                return .retry(retryAfter: nil)
            }
        default:
            // A protocol violation, a TLS or configuration failure, an oversized message, a
            // full queue: retrying would fail the same way.
            return .fail
        }
    }

    /// The delay cap for the `attempt`-th consecutive failed attempt (1-based).
    func delayCap(afterAttempt attempt: Int) -> Duration {
        let exponent = Double(max(0, attempt - 1))
        let seconds = Self.seconds(initialDelay) * pow(multiplier, exponent)
        return min(maxDelay, Self.duration(seconds: min(seconds, 1e9)))
    }

    /// A full-jitter delay for the `attempt`-th failed attempt: uniform in `0...cap`,
    /// raised to `retryAfter` when the server asked for more.
    func delay(afterAttempt attempt: Int, retryAfter: Duration? = nil, random: Double) -> Duration {
        let jittered = Self.duration(seconds: Self.seconds(delayCap(afterAttempt: attempt)) * min(max(random, 0), 1))
        guard let retryAfter else { return jittered }
        return max(jittered, retryAfter)
    }

    /// `Retry-After` as a number of seconds (the HTTP-date form is not supported and ignored).
    static func parseRetryAfter(_ value: String) -> Duration? {
        guard let seconds = Int(value.trimmingWhitespace), seconds >= 0 else { return nil }
        return .seconds(seconds)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    static func duration(seconds: Double) -> Duration {
        .nanoseconds(Int64((max(0, seconds) * 1e9).rounded()))
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 && result < 1e12 {
            result *= base
            remaining -= 1
        }
        return result
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
