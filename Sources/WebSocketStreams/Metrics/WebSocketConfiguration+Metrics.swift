import CoreMetrics

extension WebSocketConfiguration {
    /// Where a connection reports its metrics (swift-metrics), and under which names.
    ///
    /// By default connections report to `MetricsSystem.factory`: nothing is recorded until
    /// the program bootstraps a metrics backend (or binds one with `withMetricsFactory`
    /// around `connect`), and with none a connection does no metrics work at all. Give a
    /// ``factory`` to report somewhere else, e.g. a test's `TestMetrics`. The metrics and
    /// their names are listed in <doc:Metrics>.
    ///
    /// ```swift
    /// var configuration = WebSocketConfiguration()
    /// configuration.metrics.dimensions = [("endpoint", "prices")]
    /// ```
    public struct Metrics: Sendable {
        /// The backend to report to; `nil` (the default) uses `MetricsSystem.factory` as it
        /// is when ``WebSocket/connect(to:configuration:eventLoop:)-(String,_,_)`` is called.
        public var factory: (any MetricsFactory)?

        /// The start of every metric's label: `websocket_client` gives
        /// `websocket_client_connections_opened_total` and so on.
        public var labelPrefix = "websocket_client"

        /// Dimensions added to every metric, after its own (e.g. `[("endpoint", "prices")]`),
        /// to tell apart connections that serve different purposes.
        public var dimensions: [(String, String)] = []

        /// Reports to `MetricsSystem.factory`, labels start with `websocket_client`, no extra dimensions.
        public init() {}
    }
}
