import WebSocketStreams

/// One run's settings, after defaults are applied.
struct BenchmarkParameters: Sendable {
    var workload: Workload
    var url: String
    var count: Int
    var size: Int
    var inflight: Int
    var connections: Int
    var configuration: WebSocketConfiguration

    /// The name wsbench reports itself by, next to wsbench-c's `raw-c`.
    static let clientName = "websocketstreams"

}
