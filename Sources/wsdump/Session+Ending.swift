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
        guard phase == .open, let link else {
            if phase == .connecting { pendingClose = code }
            return
        }
        phase = .closing
        requestedCloseCode = code
        if isInteractive { console.setFooter(nil) }
        if viaQueue, let outgoing, !options.reconnect || link.isConnected {
            outgoing.enqueue(.close(code: code, reason: reason))
        } else {
            closeNow(code, reason: reason)
        }
    }

    /// Closes the link at once, without waiting for the queue (once per code).
    func closeNow(_ code: WebSocketCloseCode, reason: String = "") {
        guard let link, !closedNow.contains(code) else { return }
        closedNow.insert(code)
        Task { await link.close(code: code, reason: reason) }
    }

    /// `--timeout` passed: close with 1000 (or stop connecting); the exit status will be 4.
    func timeoutElapsed() {
        timedOut = true
        let limit = MessageFormatter.seconds(options.timeout ?? .zero)
        printStatus(["timeout: \(limit) seconds passed" + (phase == .connecting ? " while connecting" : "; closing")])
        if phase == .connecting {
            pendingClose = .normalClosure
            connectTask?.cancel()
        } else {
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
        switch phase {
        case .connecting:
            pendingClose = .goingAway
            connectTask?.cancel()
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
        var names = (outgoing?.undelivered ?? []).compactMap { item -> String? in
            switch item {
            case .message(let message, _): MessageFormatter.shortName(of: message)
            case .file(let path), .streamedFile(let path): "the file \(path)"
            case .close: nil
            }
        }
        names += (link?.unsentMessages ?? []).map(MessageFormatter.shortName(of:))
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
        if phase == .closing, case .reconnecting = state {
            // The connection dropped while a close waited behind queued messages: they
            // cannot go out now, so close without them.
            closeNow(requestedCloseCode ?? .normalClosure)
        }
        switch state {
        case .failed(let error):
            finalState = state
            printError(ErrorAdvice.line(for: error, options: options))
        default:
            printStatus([MessageFormatter.stateLine(state)])
            if state.isTerminal { finalState = state }
        }
        return endIfFinished()
    }

    /// The exit status once the connection (or reconnecting socket) has fully ended.
    func endIfFinished() -> ExitStatus? {
        guard receiveEnded else { return nil }
        if options.reconnect {
            guard let finalState else { return nil }
            if timedOut { return .timedOut }
            if case .failed(let error) = finalState { return ExitStatus.forFailure(error) }
            return .normalClose
        }
        guard let connection = directConnection else { return nil }
        recorder?.ended(connection.ending)
        let code = connection.closeCode ?? .abnormalClosure
        let reason = connection.closeReason
        let status = ExitStatus.forEnd(code: code, error: connection.error, requestedCode: requestedCloseCode)
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
