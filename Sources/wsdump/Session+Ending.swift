import TaskLifetimes
import WebSocketStreams

/// Ending: closing (EOF, --count, --timeout, Ctrl-C, /close), and turning how the
/// connection ended into the closing lines and the exit status.
extension Session {
    /// Asks for a close once. Through the queue, it follows every message queued before;
    /// otherwise it goes out at once (after what the connection already holds).
    ///
    /// With `--reconnect` and no connection open, queued messages have nothing to go out
    /// on: the close is not queued behind them (it would wait for a server that may never
    /// come back), and what they were is reported when the session ends.
    func beginClose(_ code: WebSocketCloseCode, reason: String = "", viaQueue: Bool) {
        let connected: SessionStage.Connected
        switch stage {
        case .connecting(var connecting):
            connecting.pendingClose = code
            stage = .connecting(connecting)
            return
        case .closing:
            return
        case .open(let open):
            connected = open
        }
        stage = .closing(connected, code: code)
        if isInteractive { console.setFooter(nil) }
        if viaQueue, !options.reconnect || connected.link.isConnected {
            connected.outgoing.enqueue(.close(code: code, reason: reason))
        } else {
            closeNow(code, reason: reason)
        }
    }

    /// Closes the link at once, without waiting for the queue (once per code).
    func closeNow(_ code: WebSocketCloseCode, reason: String = "") {
        guard let link = stage.connected?.link else { return }
        var isFirst = false
        stage.updateConnected { isFirst = $0.closedNow.insert(code).inserted }
        guard isFirst else { return }
        tasks.addTask { await link.close(code: code, reason: reason) }
    }

    /// `--timeout` passed: close with 1000 (or stop connecting); the exit status will be 4.
    func timeoutElapsed() {
        timedOut = true
        let limit = MessageFormatter.seconds(options.timeout ?? .zero)
        if case .connecting(var connecting) = stage {
            printStatus(["timeout: \(limit) seconds passed while connecting"])
            connecting.pendingClose = .normalClosure
            stage = .connecting(connecting)
            connecting.attempt.cancel()
        } else {
            printStatus(["timeout: \(limit) seconds passed; closing"])
            beginClose(.normalClosure, viaQueue: false)
        }
    }

    /// How long the close after an interrupt may take before wsdump quits anyway.
    static let interruptGrace: Duration = .seconds(1)

    /// SIGINT, SIGTERM, SIGHUP or Ctrl-C: close with 1001; a second one, or one second
    /// without the close finishing, quits at once.
    func interrupted() -> ExitStatus? {
        interrupts += 1
        if interrupts > 1 {
            printStatus(["interrupted again: quitting without waiting for the close handshake"])
            return quitStatus()
        }
        startTimer(after: Self.interruptGrace, posting: .interruptGraceElapsed)
        switch stage {
        case .connecting(var connecting):
            connecting.pendingClose = .goingAway
            stage = .connecting(connecting)
            connecting.attempt.cancel()
        case .open:
            beginClose(.goingAway, viaQueue: false)
        case .closing:
            // A close already under way (after end of input) may be waiting behind queued
            // messages: close now.
            closeNow(.goingAway)
        }
        return nil
    }

    /// The close after an interrupt has not finished in a second (a peer that does not
    /// answer, a send stuck behind backpressure, a reconnect loop): quit now.
    func interruptGraceElapsed() -> ExitStatus? {
        interrupts += 1
        printStatus(["the close did not finish within \(Self.interruptGrace): quitting"])
        return quitStatus()
    }

    /// The status when quitting without waiting for the end (unsent messages are
    /// reported by ``reportUndelivered(_:)`` as the session ends).
    private func quitStatus() -> ExitStatus {
        timedOut ? .timedOut : .normalClose
    }

    /// The session is over: names the messages (and `--file`) that were never delivered
    /// (still queued, failed, or accepted by a connection that ended before writing them)
    /// on standard error, and makes a status that would be 0 a 1.
    func reportUndelivered(_ status: ExitStatus) -> ExitStatus {
        var names = (stage.connected?.outgoing.undelivered ?? []).compactMap { item -> String? in
            switch item {
            case .message(let message, _): MessageFormatter.shortName(of: message)
            case .file(let path), .streamedFile(let path): "the file \(path)"
            case .close: nil
            }
        }
        names += (stage.connected?.link.unsentMessages ?? []).map(MessageFormatter.shortName(of:))
        guard !names.isEmpty else { return status }
        let line = MessageFormatter.undeliveredLine(names)
        if options.jsonLines { printData([JSONLineRecord.failure(line, time: Self.unixTime).encoded()]) }
        printError(line)
        return status == .normalClose ? .connectionFailed : status
    }

    /// A `--reconnect` state change: printed, and the end once it is terminal.
    func stateChanged(_ state: ReconnectingWebSocket.State) -> ExitStatus? {
        if state == .idle { return nil }
        if options.jsonLines {
            var record = JSONLineRecord(time: Self.unixTime, direction: .event, type: .state)
            record.data = state.description
            printData([record.encoded()])
        }
        if case .closing(_, let code) = stage, case .reconnecting = state {
            // The connection dropped while a close waited behind queued messages: they
            // cannot go out now, so close without them.
            closeNow(code)
        }
        switch state {
        case .failed(let error):
            stage.updateConnected { $0.finalState = state }
            printError(ErrorAdvice.line(for: error, options: options))
        default:
            printStatus([MessageFormatter.stateLine(state)])
            if state.isTerminal { stage.updateConnected { $0.finalState = state } }
        }
        return endIfFinished()
    }

    /// The exit status once the connection (or reconnecting socket) has fully ended.
    func endIfFinished() -> ExitStatus? {
        guard case .ended = receiving, let connected = stage.connected else { return nil }
        if options.reconnect {
            guard let finalState = connected.finalState else { return nil }
            if timedOut { return .timedOut }
            if case .failed(let error) = finalState { return ExitStatus.forFailure(error) }
            return .normalClose
        }
        guard let connection = connected.directConnection else { return nil }
        recorder?.ended(connection.ending)
        let code = connection.closeCode ?? .abnormalClosure
        let reason = connection.closeReason
        let requestedCode = if case .closing(_, let code) = stage { code } else { WebSocketCloseCode?.none }
        let status = ExitStatus.forEnd(code: code, error: connection.error, requestedCode: requestedCode)
        if options.jsonLines {
            printData([JSONLineRecord.close(direction: .event, code: code, reason: reason, time: Self.unixTime).encoded()])
            if let error = connection.error {
                printData([JSONLineRecord.failure(error.description, time: Self.unixTime).encoded()])
            }
        }
        let line = MessageFormatter.closeLine(code: code, reason: reason)
        if status == .normalClose {
            printStatus([line])
        } else {
            console.printStatus([statusPalette.error(line)])
        }
        if let error = connection.error { printError(ErrorAdvice.line(for: error, options: options)) }
        return timedOut ? .timedOut : status
    }
}
