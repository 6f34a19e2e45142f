import Foundation
import Glibc
import TaskLifetimes
import WebSocketStreams

/// Input: piped lines, the interactive line editor, and slash commands.
extension Session {
    /// Starts reading standard input, once: raw keys for the line editor, or lines.
    func startInput() {
        guard case .open(var connected) = stage, case .notStarted = connected.input, !options.listens else { return }
        connected.input = .reading
        stage = .open(connected)
        let post = post
        if isInteractive {
            Terminal.enterRawMode()
            StandardInput.readBytes(onBytes: { post.yield(.keys($0)) }, onEnd: { post.yield(.inputEnded) })
            drawPrompt()
        } else {
            StandardInput.readLines(
                credits: credits, onLine: { post.yield(.inputLine($0)) }, onEnd: { post.yield(.inputEnded) })
        }
    }

    /// A piped line: sent as text, or binary with `--binary`.
    func inputLine(_ bytes: [UInt8]) {
        guard case .open(var connected) = stage else {
            credits.giveBack()
            return
        }
        let message: WebSocketMessage = options.sendsLinesAsBinary
            ? .binary(Data(bytes)) : .text(String(decoding: bytes, as: UTF8.self))
        connected.sentAnything = true
        stage = .open(connected)
        connected.outgoing.enqueue(.message(message, fromInput: true))
    }

    /// Input ended: wait `--eof-wait` (or for `--wait-replies` messages), then close with 1000.
    /// Piped input that ends before anything was sent (`wsdump URL </dev/null`) closes
    /// nothing: the session only listens, as with `--listen`, since closing at once would
    /// make what the server pushes a race against our close frame.
    func inputFinished() {
        guard let connected = stage.connected, !inputHasEnded else { return }
        stage.updateConnected { $0.input = .ended }
        if isInteractive { console.setFooter(nil) }
        guard stage.isOpen else { return }
        if !isInteractive, !connected.sentAnything, options.waitReplies == nil, options.eofWait == .zero {
            if options.verbosity >= 1 {
                printStatus(["input ended before anything was sent: listening until the server closes, --count, --timeout or Ctrl-C"])
            }
            return
        }
        if let waitReplies = options.waitReplies, receivedCount < waitReplies {
            // Closed by `received` once enough have arrived, or by the timer.
            startTimer(after: options.eofWait > .zero ? options.eofWait : Self.replyWaitLimit, posting: .eofWaitElapsed)
        } else if options.eofWait > .zero {
            startTimer(after: options.eofWait, posting: .eofWaitElapsed)
        } else {
            beginClose(.normalClosure, viaQueue: true)
        }
    }

    /// Whether standard input has ended.
    var inputHasEnded: Bool {
        if case .ended = stage.connected?.input { return true }
        return false
    }

    /// How long `--wait-replies` waits without `--eof-wait`.
    static let replyWaitLimit: Duration = .seconds(10)

    /// Keys typed at the prompt. Ctrl-C is handled like SIGINT (raw mode turns the key
    /// into a byte instead of a signal).
    func typed(_ bytes: [UInt8]) {
        for key in keyDecoder.feed(bytes) {
            if inputHasEnded || !stage.isOpen {
                // Only Ctrl-C still matters: a second one quits at once.
                if key == .interrupt { post.yield(.interrupted) }
                continue
            }
            switch editor.apply(key) {
            case .unchanged:
                break
            case .edited:
                drawPrompt()
            case .submitted(let line):
                console.commitFooter(as: dataPalette.prompt("> ") + MessageFormatter.visible(line))
                submit(line)
                if stage.isOpen { drawPrompt() }
            case .endOfInput:
                inputFinished()
            case .interrupted:
                post.yield(.interrupted)
            }
        }
    }

    /// A line submitted at the prompt: a message or a slash command.
    private func submit(_ line: String) {
        guard let connected = stage.connected else { return }
        let outgoing = connected.outgoing
        switch SlashCommand.parse(line) {
        case .send(let text):
            let message: WebSocketMessage = options.sendsLinesAsBinary ? .binary(Data(text.utf8)) : .text(text)
            outgoing.enqueue(.message(message, fromInput: false))
        case .binary(let data):
            outgoing.enqueue(.message(.binary(data), fromInput: false))
        case .ping(let payload):
            let post = post
            tasks.addTask { [link = connected.link] in
                do {
                    let roundTrip = try await link.ping(payload: payload.map { Array($0.utf8) })
                    post.yield(.pingFinished(.success(roundTrip), requestedPayload: payload))
                } catch let error as WebSocketError {
                    post.yield(.pingFinished(.failure(error), requestedPayload: payload))
                } catch {}
            }
        case .close(let code, let reason):
            beginClose(code, reason: reason, viaQueue: true)
        case .help:
            printStatus(SlashCommand.helpLines)
        case .invalid(let message):
            printStatus([message])
        }
    }

    /// Prints a `/ping` result.
    func pingFinished(_ result: Result<Duration, WebSocketError>, requestedPayload: String?) {
        switch result {
        case .success(let roundTrip):
            var line = "pong: \(MessageFormatter.milliseconds(roundTrip))"
            if let requestedPayload { line += " (payload \(requestedPayload.debugDescription))" }
            printStatus([line])
        case .failure(let error):
            printError("ping failed: \(error)")
        }
    }

    /// Draws the prompt with the text being edited.
    func drawPrompt() {
        let rendered = PromptLine.render(
            prompt: dataPalette.prompt("> "), promptWidth: 2, characters: editor.characters, cursor: editor.cursor,
            columns: Terminal.columns(of: STDOUT_FILENO))
        console.setFooter(.init(descriptor: STDOUT_FILENO, rendered: rendered))
    }
}
