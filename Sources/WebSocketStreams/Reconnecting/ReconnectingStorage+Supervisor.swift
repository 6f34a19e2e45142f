import CoreMetrics
import DequeModule
import SynchronizationSupport

extension ReconnectingStorage {
    /// The supervisor: connects, runs `onConnect`, feeds queued sends to the connection,
    /// waits for it to end, backs off, and repeats until the state machine says finish.
    func supervise() async {
        var action = shared.withLock { $0.machine.start() }
        let reconnects = MetricsScope(configuration.metrics)?.counter(ConnectionMetrics.Names.reconnects)
        var isFirstAttempt = true
        while true {
            switch action {
            case .connect(let attempt):
                if !isFirstAttempt { reconnects?.increment() }
                isFirstAttempt = false
                publish(.connecting(attempt: attempt))
                action = await runConnection()
            case .wait(let delay, let cause):
                publish(.reconnecting(after: delay, cause: cause))
                // Cancelled when the socket is ended; the state machine then finishes.
                try? await timing.sleep(for: delay)
                action = shared.withLock { $0.machine.retryDue() }
            case .finish(let finalState):
                finish(finalState)
                return
            }
        }
    }

    /// One connection attempt and, if it succeeds, the connection's whole life.
    private func runConnection() async -> ReconnectStateMachine.Action {
        let target: (url: String, configuration: WebSocketConfiguration)
        switch await prepareAttempt() {
        case .ready(let url, let configuration): target = (url, configuration)
        case .over(let action): return action
        }
        let socket: WebSocket
        do {
            socket = try await WebSocket.connect(
                to: target.url, configuration: target.configuration, eventLoop: loopForNextConnection())
        } catch {
            let failure = (error as? WebSocketError) ?? .connectionFailed("the attempt was cancelled")
            return shared.withLock { $0.machine.attemptFailed(failure, random: .random(in: 0...1)) }
        }
        let (proceed, consumers) = shared.withLock { shared in
            guard shared.machine.requestedEnd == nil else { return (false, [UnsafeContinuation<Void, Never>]()) }
            shared.machine.connected(subprotocol: socket.subprotocol, at: now)
            shared.consumer.readers.append(socket.connection)
            shared.current = socket
            defer { shared.consumer.waiters = [] }
            return (true, shared.consumer.waiters)
        }
        for consumer in consumers { consumer.resume() }
        guard proceed else {
            // Ended while this attempt was connecting: close what it opened, properly.
            let endClose = self.endClose
            await socket.close(code: endClose.code, reason: endClose.reason)
            return shared.withLock { $0.machine.connectionEnded(.closed(code: .goingAway, reason: ""), at: now, random: 0) }
        }
        publish(.connected(subprotocol: socket.subprotocol))

        if let onConnect {
            do {
                try await onConnect(socket)
            } catch {
                socket.connection.requestClose(code: .goingAway, reason: "onConnect failed")
            }
        }
        shared.withLock { $0.onConnectFinished = true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pump(socket.connection) }
            await socket.connection.waitForEnding()
            stopPump()
            group.cancelAll()
        }

        let ended = socket.error ?? .closed(code: socket.closeCode ?? .abnormalClosure, reason: socket.closeReason)
        let unsent = socket.unsentMessages
        if !unsent.isEmpty {
            MetricsScope(configuration.metrics)?.counter(ConnectionMetrics.Names.messagesResent).increment(by: unsent.count)
        }
        return shared.withLock { shared in
            shared.current = nil
            shared.onConnectFinished = false
            // Accepted by the connection but never acknowledged by the peer: first in line for the next one.
            for message in unsent.reversed() {
                shared.outbox.nextSendID += 1
                shared.outbox.queue.prepend(
                    QueuedMessage(id: shared.outbox.nextSendID, message: message, options: .uncompressed, sender: nil))
                shared.outbox.queuedBytes += message.byteCount
            }
            return shared.machine.connectionEnded(ended, at: now, random: .random(in: 0...1))
        }
    }

    /// What ``prepareAttempt()`` decided.
    private enum PreparedAttempt {
        /// Connect to `url` with `configuration`.
        case ready(url: String, configuration: WebSocketConfiguration)
        /// No attempt: the socket ends (prepare threw, or the socket was ended meanwhile).
        case over(ReconnectStateMachine.Action)
    }

    /// The URL and configuration of the attempt about to start: the socket's own, or what
    /// the `prepare` hook made of them for this attempt only.
    private func prepareAttempt() async -> PreparedAttempt {
        guard let prepare else { return .ready(url: url, configuration: configuration) }
        let start = shared.withLock { shared -> (number: Int, previousError: WebSocketError?)? in
            guard shared.machine.requestedEnd == nil else { return nil }
            shared.isPreparing = true
            return (shared.machine.attemptNumber, shared.machine.previousError)
        }
        guard let start else { return .over(endedWhilePreparing()) }
        var attempt = WebSocketConnectAttempt(
            number: start.number, url: url, headers: configuration.headers, previousError: start.previousError)
        do {
            try await prepare(&attempt)
        } catch {
            return .over(shared.withLock { shared in
                shared.isPreparing = false
                return shared.machine.prepareFailed(.prepareFailed(String(describing: error)))
            })
        }
        let ended = shared.withLock { shared in
            shared.isPreparing = false
            return shared.machine.requestedEnd != nil
        }
        if ended { return .over(endedWhilePreparing()) }
        var prepared = configuration
        prepared.headers = attempt.headers
        return .ready(url: attempt.url, configuration: prepared)
    }

    /// The socket was ended before its attempt started: it finishes as asked.
    private func endedWhilePreparing() -> ReconnectStateMachine.Action {
        shared.withLock { shared in
            shared.machine.requestedEnd.map { shared.machine.finish($0) } ?? .finish(shared.machine.state)
        }
    }

    /// The close frame for a connection that opens after the socket was ended.
    private var endClose: (code: WebSocketCloseCode, reason: String) {
        shared.withLock { shared in
            if let endClose = shared.ending.close { return endClose }
            if case .completed = shared.machine.requestedEnd { return (.normalClosure, "") }
            return (.goingAway, "")
        }
    }

    // MARK: - The pump

    /// Writes queued messages to `connection`, in order, until it ends or the pump is stopped.
    /// A message the connection refuses goes back to the front of the queue.
    private func pump(_ connection: ClientConnection) async {
        shared.withLock { $0.outbox.pumpStopped = false }
        while let item = await nextQueued() {
            do {
                try await connection.send(item.message, options: item.options)
                item.sender?.resume()
            } catch {
                shared.withLock { shared in
                    shared.outbox.queue.prepend(item)
                    shared.outbox.queuedBytes += item.message.byteCount
                }
                return
            }
        }
    }

    private func nextQueued() async -> QueuedMessage? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<QueuedMessage?, Never>) in
                let ready: QueuedMessage?? = shared.withLock { shared in
                    if shared.outbox.pumpStopped { return .some(nil) }
                    if let first = shared.outbox.queue.popFirst() {
                        shared.outbox.queuedBytes -= first.message.byteCount
                        return .some(first)
                    }
                    shared.outbox.pumpWaiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            stopPump()
        }
    }

    /// Stops the pump of the connection that just ended.
    private func stopPump() {
        let waiter = shared.withLock { shared in
            shared.outbox.pumpStopped = true
            defer { shared.outbox.pumpWaiter = nil }
            return shared.outbox.pumpWaiter
        }
        waiter?.resume(returning: nil)
    }
}
