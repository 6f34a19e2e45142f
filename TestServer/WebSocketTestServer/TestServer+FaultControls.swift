import LibWebSocketsLoop
import WebSocketStreams

/// Fault controls: a network failure, a graceful restart, a server that is down.
extension TestServer {
    /// Drops every open WebSocket connection at once, without a close frame (clients see
    /// 1006), as a network failure would. Replies the server had not written yet are
    /// dropped with them. Returns how many were dropped, once their sockets are closed
    /// (at most 2 s later). (Not those of the raw TLS listener.)
    @discardableResult
    public func disconnectAll() async -> Int {
        let dropped = await onLoopThread { [loop] in loop.disconnectAll() } ?? []
        // Returns once their sockets are closed, so bytes a client sends after this meet a
        // closed socket (reset, never acknowledged), not one still open but no longer read.
        let deadline = ContinuousClock.now + .seconds(2)
        while !dropped.isEmpty, ContinuousClock.now < deadline,
              await onLoopThread({ [loop] in loop.holdsAny(of: dropped) }) == true {
            try? await Task.sleep(for: .milliseconds(1))
        }
        return dropped.count
    }

    /// Closes every open WebSocket connection with a close frame carrying `code` (1001, going
    /// away, by default), as a server that restarts gracefully does, and waits up to
    /// `timeout` for them to end. Returns how many it closed. (Not those of the raw TLS
    /// listener.)
    @discardableResult
    public func goAway(code: WebSocketCloseCode = .goingAway, timeout: Duration = .seconds(2)) async -> Int {
        let closed = await onLoopThread { [loop] in loop.goAwayAll(code: UInt32(code.rawValue)) } ?? 0
        let deadline = ContinuousClock.now + timeout
        while !snapshot.openConnections.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return closed
    }

    /// Makes the server drop every new TCP connection as soon as it is accepted, for
    /// `duration`, as a server that is down would. Connections already open stay open.
    /// (The raw TLS listener keeps accepting.)
    public func refuseConnections(for duration: Duration) async {
        _ = await onLoopThread { [loop] in loop.refuseConnections(for: duration) }
    }

    /// Runs `body` on the server's thread; `nil` once the server has stopped.
    func onLoopThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let posted = thread.post(LoopClosure { continuation.resume(returning: body()) })
            if !posted { continuation.resume(returning: nil) }
        }
    }
}
