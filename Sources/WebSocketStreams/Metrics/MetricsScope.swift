import CoreMetrics

/// The backend, label prefix and extra dimensions one connection (or one
/// ``ReconnectingWebSocket``) reports its metrics with; it makes the metric handles.
///
/// `nil` from ``init(_:)`` when the backend is swift-metrics' no-op one (nothing
/// bootstrapped): every recording site checks for `nil` first, so a program without a
/// backend does no metrics work at all, not even calls into the no-op handlers.
struct MetricsScope: Sendable {
    let factory: any MetricsFactory
    let labelPrefix: String
    let dimensions: [(String, String)]

    /// The scope of `settings`, or `nil` when nothing would be recorded. Reads
    /// `MetricsSystem.factory` (task-local binding included) when no factory is set.
    init?(_ settings: WebSocketConfiguration.Metrics) {
        let factory = settings.factory ?? MetricsSystem.factory
        if factory is NOOPMetricsHandler { return nil }
        self.factory = factory
        labelPrefix = settings.labelPrefix
        dimensions = settings.dimensions
    }

    /// The full label of `name`, e.g. `websocket_client_reconnects_total`.
    func label(_ name: String) -> String {
        labelPrefix.isEmpty ? name : "\(labelPrefix)_\(name)"
    }

    func counter(_ name: String, _ own: [(String, String)] = []) -> Counter {
        Counter(label: label(name), dimensions: own + dimensions, factory: factory)
    }

    func meter(_ name: String, _ own: [(String, String)] = []) -> Meter {
        Meter(label: label(name), dimensions: own + dimensions, factory: factory)
    }

    func timer(_ name: String, _ own: [(String, String)] = []) -> CoreMetrics.Timer {
        CoreMetrics.Timer(label: label(name), dimensions: own + dimensions, factory: factory)
    }
}

extension CoreMetrics.Timer {
    /// Records `duration` in nanoseconds (CoreMetrics has no `Duration` overload).
    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        recordNanoseconds(overflow ? Int64.max : scaled &+ attoseconds / 1_000_000_000)
    }
}
