import Foundation
import WebSocketStreams

/// Output: received and sent messages, control frames, status lines.
extension Session {
    /// The current Unix time, for `--jsonl`.
    static var unixTime: Double { Date().timeIntervalSince1970 }

    /// A received message; after `--count` of them, closes with 1000 (later ones are not shown).
    func received(_ message: WebSocketMessage) {
        recorder?.message(message, outgoing: false)
        if let count = options.count, receivedCount >= count { return }
        if options.jsonLines {
            printData([JSONLineRecord.message(message, direction: .incoming, time: Self.unixTime).encoded()])
        } else {
            let elapsed = options.timings ? stage.connected?.openedAt.map { ContinuousClock.now - $0 } : nil
            printData(formatter.lines(for: message, direction: .received, elapsed: elapsed).map(dataPalette.received))
        }
        messageReceived()
    }

    /// A piece of a message arrived (`--stream`). Text is printed as it comes, the line
    /// growing piece by piece; binary is written byte for byte with `-r`, and otherwise
    /// shown by its size once it ends. Nothing of a message is held.
    func received(_ piece: ReceivedPiece) {
        if let count = options.count, receivedCount >= count { return }
        switch piece.kind {
        case .text:
            // The prefix with the first piece (or with the end of an empty message).
            var bytes: [UInt8] = piece.index == 0 && formatter.decorated ? Array("< ".utf8) : []
            bytes += piece.bytes
            if piece.isLast { bytes.append(0x0A) }
            console.printRaw(bytes)
        case .binary where options.raw:
            console.printRaw(Array(piece.bytes))
        case .binary:
            if piece.isLast {
                let line = "binary (\(MessageFormatter.byteCount(piece.byteCount)), in \(piece.index) piece\(piece.index == 1 ? "" : "s"))"
                printData([dataPalette.received(formatter.decorated ? "< " + line : line)])
            }
        }
        if piece.isLast { messageReceived() }
    }

    /// Counts a message received, closing as `--count` and `--wait-replies` say.
    private func messageReceived() {
        receivedCount += 1
        if let count = options.count, receivedCount >= count { beginClose(.normalClosure, viaQueue: false) }
        if inputHasEnded, let waitReplies = options.waitReplies, receivedCount == waitReplies {
            beginClose(.normalClosure, viaQueue: true)
        }
    }

    /// A message is being sent: `--jsonl` records it; `-v` echoes it (`> text`), on
    /// standard output for a terminal and on standard error otherwise (a pipe gets only
    /// received data).
    func sending(_ message: WebSocketMessage) {
        recorder?.message(message, outgoing: true)
        if options.jsonLines {
            printData([JSONLineRecord.message(message, direction: .outgoing, time: Self.unixTime).encoded()])
            return
        }
        guard options.verbosity >= 1, !isInteractive else { return }
        let lines = formatter.lines(for: message, direction: .sent)
        if formatter.decorated {
            printData(lines.map(dataPalette.sent))
        } else {
            printStatus(lines)
        }
    }

    /// A `--send-file` upload starts: `-v` says so (its pieces are not echoed).
    func sendingFile(path: String, size: Int) {
        guard options.verbosity >= 1, !isInteractive else { return }
        let line = "> file \(path) (\(MessageFormatter.byteCount(size)), sent in pieces)"
        if formatter.decorated { printData([dataPalette.sent(line)]) } else { printStatus([line]) }
    }

    /// A handshake head or a control frame: with `-vv`, the handshake's request and
    /// response headers and one status line per control frame; with `--jsonl`, a JSON line
    /// per control frame.
    func wireEvent(_ event: WebSocketWireEvent) {
        // The observer reports the peer's close as the frame is read, before the messages read
        // just ahead of it have come through the stream: shown once the stream has ended, so
        // the output keeps wire order.
        if event.kind == .closeReceived, case .receiving = receiving, !options.reconnect {
            receiving = .receiving(heldClose: event)
            return
        }
        if options.jsonLines, let record = JSONLineRecord.controlFrame(event, time: Self.unixTime) {
            printData([record.encoded()])
        }
        if options.verbosity == 1, let line = HandshakeDescription.redirectLine(for: event, redactor: redactor) {
            printStatus([line])
        }
        guard options.verbosity >= 2 else { return }
        if let lines = HandshakeDescription.lines(for: event, proxy: options.configuration.proxy?.url, redactor: redactor) {
            printStatus(lines)
        } else {
            printStatus([MessageFormatter.controlFrameLine(event)])
        }
    }

    /// Lines of data on standard output.
    func printData(_ lines: [String]) {
        console.printData(lines)
    }

    /// Status lines on standard error, dim on a terminal.
    func printStatus(_ lines: [String]) {
        console.printStatus(lines.map(statusPalette.status))
    }

    /// `error: ...` on standard error, red on a terminal.
    func printError(_ description: String) {
        console.printStatus([statusPalette.error("error: \(description)")])
    }
}
