import CLibWebSockets
import Logging
import Synchronization

/// Several ``WebSocketEventLoop``s, one thread each, with new connections placed on the
/// least loaded: the way to use every core for many connections.
///
/// Connections made without an explicit loop go to ``shared``, a group with one loop per
/// core the process may use (``defaultLoopCount``), so an app spreads over every core
/// without code of its own. A loop's thread starts with its first connection: a program
/// with one connection runs one loop thread.
///
/// ```swift
/// let group = WebSocketEventLoopGroup(loopCount: 4, name: "feeds")
/// let connection = try await WebSocket.connect(to: "wss://example.org/feed", eventLoop: group.next())
/// // ...
/// await group.shutdown()   // closes every connection with 1001, then stops every thread
/// ```
///
/// A task that prefers one of the group's loops as its executor
/// (`withTaskExecutorPreference(loop)`) gets that loop from ``next()``, so its connection
/// and its code share a thread (no hop between a message arriving and the answer being written).
public final class WebSocketEventLoopGroup: Sendable {
    /// The group connections use when no loop is given: ``defaultLoopCount`` loops, the
    /// first of them ``WebSocketEventLoop/shared``.
    public static let shared = WebSocketEventLoopGroup(first: .shared, loopCount: defaultLoopCount, name: "ws-shared-loop")

    /// The number of cores this process may run on (its CPU affinity), at least 1.
    public static var defaultLoopCount: Int {
        Int(wss_available_cpu_count())
    }

    /// The group's loops.
    public let loops: [WebSocketEventLoop]
    /// Where ``next()`` starts looking, advanced at each call, so ties are taken in turn
    /// (a burst of connects, none open yet, spreads over every loop).
    private let rotation = Atomic<Int>(0)

    /// Creates `loopCount` loops (threads start with their first connection).
    ///
    /// - Parameters:
    ///   - loopCount: How many loops; ``defaultLoopCount`` by default.
    ///   - name: The loops' thread names get `-1`, `-2`, ... appended.
    ///   - logger: Receives libwebsockets lines logged outside any connection's callbacks.
    public init(loopCount: Int = WebSocketEventLoopGroup.defaultLoopCount, name: String = "ws-loop", logger: Logger? = nil) {
        let count = max(1, loopCount)
        loops = (1...count).map { WebSocketEventLoop(name: count == 1 ? name : "\(name)-\($0)", logger: logger) }
    }

    /// Creates `loopCount` loops that all wait as `configuration` says, e.g. in latency mode
    /// (``WebSocketEventLoop/Configuration/lowLatency(busyPolling:)``). Each loop in latency
    /// mode may keep one core busy while its connections are active: give a latency-mode
    /// group fewer loops than the machine has cores.
    ///
    /// - Parameters:
    ///   - loopCount: How many loops; ``defaultLoopCount`` by default.
    ///   - name: The loops' thread names get `-1`, `-2`, ... appended.
    ///   - logger: Receives libwebsockets lines logged outside any connection's callbacks.
    ///   - configuration: How every loop of the group waits; see ``WebSocketEventLoop/Configuration``.
    public init(
        loopCount: Int = WebSocketEventLoopGroup.defaultLoopCount, name: String = "ws-loop", logger: Logger? = nil,
        configuration: WebSocketEventLoop.Configuration
    ) {
        let count = max(1, loopCount)
        loops = (1...count).map {
            WebSocketEventLoop(name: count == 1 ? name : "\(name)-\($0)", logger: logger, configuration: configuration)
        }
    }

    private init(first: WebSocketEventLoop, loopCount: Int, name: String) {
        loops = [first] + (1..<max(1, loopCount)).map { WebSocketEventLoop(name: "\(name)-\($0 + 1)") }
    }

    /// The loop for a new connection: the loop the current task prefers as its executor
    /// when it is one of this group's, else the one with the fewest connections (ties
    /// taken in turn).
    public func next() -> WebSocketEventLoop {
        if loops.count == 1 { return loops[0] }
        if let preferred = withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor }),
           let loop = loops.first(where: { $0.asUnownedTaskExecutor() == preferred }) {
            return loop
        }
        let best = leastLoaded()
        best.connectionPlaced()
        return best
    }

    /// The loop with the fewest connections made or placed, ties taken in turn.
    private func leastLoaded() -> WebSocketEventLoop {
        let start = rotation.add(1, ordering: .relaxed).oldValue
        var best = loops[start % loops.count]
        var bestLoad = best.load
        for offset in 1..<loops.count {
            let loop = loops[(start + offset) % loops.count]
            let load = loop.load
            if load < bestLoad {
                best = loop
                bestLoad = load
            }
        }
        return best
    }

    /// The loop `current` unless it holds clearly more connections than the least loaded
    /// (more than twice as many, and 8 more): how a ``ReconnectingWebSocket`` keeps its loop
    /// across reconnects unless it is overloaded.
    func keeping(_ current: WebSocketEventLoop) -> WebSocketEventLoop {
        guard loops.count > 1, loops.contains(where: { $0 === current }) else { return current }
        let least = leastLoaded()
        let chosen = current.load > 2 * least.load + 8 ? least : current
        chosen.connectionPlaced()
        return chosen
    }

    /// How many connections each loop holds, in ``loops`` order.
    public var connectionCounts: [Int] { loops.map(\.connectionCount) }

    /// Shuts every loop down at once (see ``WebSocketEventLoop/shutdown(gracePeriod:)``):
    /// every connection is closed with 1001, and every thread stops.
    public func shutdown(gracePeriod: Duration = .seconds(3)) async {
        await withTaskGroup(of: Void.self) { group in
            for loop in loops {
                group.addTask { await loop.shutdown(gracePeriod: gracePeriod) }
            }
        }
    }
}
