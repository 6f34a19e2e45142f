import WebSocketStreams

/// Ending: closing (EOF, --count, --timeout, Ctrl-C, /close), and turning how the
/// connection ended into the closing lines and the exit status.
extension Session {
    /// Asks for a close once. Through the queue, it follows every message queued before;
    /// otherwise it goes out at once (after what the connection already holds).
    func beginClose(_ code: WebSocketCloseCode, reason: String = "", viaQueue: Bool) {
        guard phase == .open, let link else {
            if phase == .connecting { pendingClose = code }
            return
        }
        phase = .closing
        requestedCloseCode = code
        if isInteractive { console.setFooter(nil) }
        if viaQueue, let outgoing {
            outgoing.enqueue(.close(code: code, reason: reason))
        } else {
            Task { await link.close(code: code, reason: reason) }
        }
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
        if phase == .connecting {
            pendingClose = .goingAway
            connectTask?.cancel()
        } else {
            beginClose(.goingAway, viaQueue: false)
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

    /// The status when quitting without waiting: messages queued and never handed to the
    /// connection are reported, and make it non-zero.
    private func quitStatus() -> ExitStatus {
        let unsent = outgoing?.pendingCount ?? 0
        guard unsent > 0 else { return .normalClose }
        printError("\(unsent) message\(unsent == 1 ? " was" : "s were") not sent")
        return .connectionFailed
    }

    /// A `--reconnect` state change: printed, and the end once it is terminal.
    func stateChanged(_ state: ReconnectingWebSocket.State) -> ExitStatus? {
        if state == .idle { return nil }
        if options.jsonLines {
            var record = JSONLineRecord(time: Self.unixTime, direction: .event, type: .state)
            record.data = state.description
            printData([record.encoded()])
        }
        switch state {
        case .failed(let error):
            finalState = state
            printError(error.description)
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
        if let error = connection.error { printError(error.description) }
        return timedOut ? .timedOut : status
    }
}
