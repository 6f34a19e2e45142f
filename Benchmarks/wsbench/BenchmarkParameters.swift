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
    /// The loops connections go to: `nil` for the SDK's default (the shared group, a loop
    /// per core); `--loops N` makes a group of its own.
    var group: WebSocketEventLoopGroup? = nil
    /// `--executor loop`: the workload's tasks run on event-loop threads.
    var runsOnLoop = false
    /// W7: how long the connections are held open.
    var hold: Duration = .seconds(45)
    /// W9: how often each connection talks.
    var period: Duration = .seconds(10)
    /// `--batches`: W4 and W6 read through `messageBatches`.
    var readsBatches = false
    /// `--json`: W2 sends a feed of distinct JSON texts instead of one repeated binary payload.
    var sendsJSON = false
    /// `--stream`: autobahn reads each message in pieces and echoes it as they arrive.
    var streamsMessages = false

    /// The loop for the next connection (`nil`: let the SDK place it).
    func nextLoop() -> WebSocketEventLoop? { group?.next() }

    /// Every loop connections may go to (to warm them all before measuring).
    var loops: [WebSocketEventLoop] { (group ?? .shared).loops }

    /// The name wsbench reports itself by, next to wsbench-c's `raw-c`.
    static let clientName = "websocketstreams"

}
