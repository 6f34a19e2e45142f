extension WebSocketEventLoop {
    /// How a loop waits for its sockets: the default sleeps in the kernel as
    /// soon as nothing is ready; ``lowLatency(busyPolling:)`` keeps polling for a while first.
    ///
    /// A loop that sleeps pays for a wake-up on every message that finds it asleep: on an idle
    /// machine that is tens of microseconds per round trip (the CPU leaving its idle state, the
    /// scheduler, the thread switch), more than the protocol work itself. Request/response
    /// traffic that sends again within microseconds of each answer (trading, games, RPC over a
    /// WebSocket) spends most of its round trip there. A loop in latency mode, after each burst
    /// of work, goes on polling its sockets and its queue of posted work without blocking for
    /// up to ``busyPollDuration``, and only then sleeps; a reply or a `send` from another thread
    /// that comes within that time is handled without any wake-up.
    ///
    /// ```swift
    /// let loop = WebSocketEventLoop(name: "orders", configuration: .lowLatency())
    /// let connection = try await WebSocket.connect(to: "ws://127.0.0.1:9001/echo", eventLoop: loop)
    /// ```
    ///
    /// The cost is CPU: a loop in latency mode burns up to ``busyPollDuration`` of one core after
    /// every burst of activity. With one idle connection (nothing but keep-alive) that is one
    /// budget per wake-up of the loop, about once a second: well under 0.1% of a core. Under
    /// steady traffic that comes at least once per budget, the loop never sleeps: 100% of one
    /// core for as long as the traffic lasts. On a machine with fewer cores than busy threads
    /// the polling takes CPU time from the peers it waits for; use it where a core can be spared.
    /// A task on the default executor that reads from a latency-mode loop also polls (for at most
    /// the same budget) for the next message before it parks, so the answer reaches it without
    /// a second wake-up.
    public struct Configuration: Sendable, Hashable {
        /// How long the loop goes on polling its sockets and its queue without blocking, after
        /// the last thing it did, before it sleeps in the kernel. Zero (the default) never polls.
        ///
        /// Between about 20 and 200 microseconds covers a loopback or same-datacenter round trip.
        /// Values are clamped to `0...1 s`.
        public var busyPollDuration: Duration {
            get { storedBusyPollDuration }
            set { storedBusyPollDuration = min(max(newValue, .zero), .seconds(1)) }
        }

        private var storedBusyPollDuration: Duration = .zero

        /// Whether the loop polls before sleeping (``busyPollDuration`` above zero).
        public var isLatencyMode: Bool { busyPollDuration > .zero }

        /// The default: the loop sleeps in the kernel as soon as nothing is ready, and uses no
        /// CPU while its connections are idle.
        public init() {}

        /// A configuration that polls for `busyPollDuration` before sleeping (see
        /// ``busyPollDuration``).
        public init(busyPollDuration: Duration) {
            self.busyPollDuration = busyPollDuration
        }

        /// The default configuration: no polling.
        public static var `default`: Configuration { Configuration() }

        /// Latency mode: the loop polls for `busyPolling` (100 µs unless given) after each burst of
        /// work before it sleeps, trading CPU for the wake-up on each round trip.
        public static func lowLatency(busyPolling: Duration = .microseconds(100)) -> Configuration {
            Configuration(busyPollDuration: busyPolling)
        }
    }
}
