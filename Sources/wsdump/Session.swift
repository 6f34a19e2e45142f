import Foundation
import Glibc
import TaskLifetimes
import WebSocketStreams

/// One wsdump run: connects, sends what is typed or piped in, prints what arrives, closes,
/// and decides the exit status.
///
/// Everything that happens (a message, a line of input, a signal, a timer) is posted as a
/// ``SessionEvent`` to one stream, and ``run()`` handles the events one at a time, so the
/// session's state is only ever touched by that loop. The loop never waits for the
/// network: connecting, receiving, sending (``OutgoingQueue``) and closing run in tasks
/// the session owns (``tasks``, a `TaskBag` cancelled as it ends) and report back with
/// events. Where it is lives in one value, ``stage`` (``SessionStage``).
///
/// The session ends when the connection has ended (after a close handshake, an error, or
/// `--reconnect`'s terminal state), when connecting fails, or on a second Ctrl-C.
final class Session {
    let options: SessionOptions
    let redactor: Redactor
    let console: Console
    let events: AsyncStream<SessionEvent>
    let post: AsyncStream<SessionEvent>.Continuation
    /// Colors for standard output (messages, prompt).
    let dataPalette: Palette
    /// Colors for standard error (status lines, errors).
    let statusPalette: Palette
    let formatter: MessageFormatter
    /// Whether the line editor runs: standard input and output are terminals, no `--raw`
    /// or `--jsonl`.
    let isInteractive: Bool
    let credits = StandardInput.Credits()

    /// Where the session is: connecting, open or closing, with what each stage has.
    var stage = SessionStage.connecting(.init())
    /// Whether messages may still arrive (a peer's close held until they have been shown).
    var receiving = SessionReceiving.receiving(heldClose: nil)
    var receivedCount = 0
    /// `--timeout` passed: the exit status is 4 however the session ends.
    var timedOut = false
    var interrupts = 0
    /// The exit status of a `--header-command` that failed; wsdump ends with it.
    private(set) var headerCommandStatus: Int32?
    var editor = LineEditor()
    var keyDecoder = KeyDecoder()
    var signalWatcher: SignalWatcher?
    /// `--record`: the conversation's file.
    let recorder: ConversationRecorder?
    /// Owns every task the session starts (timers, connecting, receiving, closing, pings):
    /// cancelled together when the session ends, so none outlives it.
    let tasks = TaskBag()

    init(options: SessionOptions, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.options = options
        redactor = Redactor(showsSecrets: options.showsSecrets, sensitiveHeaders: options.configuration.sensitiveHeaders)
        (events, post) = AsyncStream<SessionEvent>.makeStream()
        let post = post
        console = Console(onOutputClosed: { post.yield(.outputClosed) })
        let plain = options.raw || options.jsonLines
        dataPalette = Palette(isEnabled: !plain && Palette.colorsWanted(isTerminal: console.outputIsTerminal, environment: environment))
        statusPalette = Palette(isEnabled: !plain && Palette.colorsWanted(isTerminal: console.errorIsTerminal, environment: environment))
        formatter = MessageFormatter(
            decorated: console.outputIsTerminal && !plain, showsType: options.verbosity >= 1 && !options.raw,
            hexDump: options.hexDump, prettyJSON: options.prettyJSON)
        isInteractive = Terminal.isTerminal(STDIN_FILENO) && console.outputIsTerminal && !plain
        // Checked writable when the options were read.
        recorder = options.recordPath.flatMap(ConversationRecorder.init(path:))
    }

    /// Runs the session to its end and returns the exit status.
    func run() async -> ExitStatus {
        let post = post
        signalWatcher = SignalWatcher { _ in post.yield(.interrupted) }
        if let timeout = options.timeout { startTimer(after: timeout, posting: .timeoutElapsed) }
        startConnecting()
        var status = ExitStatus.connectionFailed
        for await event in events {
            if let end = handle(event) {
                status = end
                break
            }
        }
        console.setFooter(nil)
        Terminal.restore()
        if interrupts > 1 {
            // Quitting at once: do not wait for a send or close still under way.
            stage.connected?.outgoing.cancel()
        } else {
            await stage.connected?.outgoing.stop()
        }
        status = reportUndelivered(status)
        if options.requireReply, receivedCount == 0, status == .normalClose {
            printError("no message was received (--require-reply)")
            status = .nothingReceived
        }
        await console.flush()
        // Nothing the session started outlives it (a timer, a close or ping under way).
        tasks.cancel()
        return status
    }

    /// Handles one event; returns the exit status once the session is over.
    private func handle(_ event: SessionEvent) -> ExitStatus? {
        switch event {
        case .opened(let connection): opened(connection)
        case .reconnected(let connection): reconnected(connection)
        case .connectFailed(let error): return connectFailed(error)
        case .headerCommandFailed(let failure):
            for line in failure.message.split(separator: "\n", omittingEmptySubsequences: false) { printError(String(line)) }
            headerCommandStatus = failure.status
            return .connectionFailed
        case .connectCancelled:
            if timedOut { return .timedOut }
            printStatus(["interrupted while connecting"])
            return .interrupted
        case .received(let message): received(message)
        case .receivedPiece(let piece): received(piece)
        case .sendingFile(let path, let size): sendingFile(path: path, size: size)
        case .receiveEnded:
            let held = if case .receiving(let close) = receiving { close } else { WebSocketWireEvent?.none }
            receiving = .ended
            if let held { wireEvent(held) }
            return endIfFinished()
        case .state(let state): return stateChanged(state)
        case .wire(let event): wireEvent(event)
        case .inputLine(let bytes): inputLine(bytes)
        case .keys(let bytes): typed(bytes)
        case .inputEnded: inputFinished()
        case .eofWaitElapsed: beginClose(.normalClosure, viaQueue: true)
        case .timeoutElapsed: timeoutElapsed()
        case .interrupted: return interrupted()
        case .interruptGraceElapsed: return interruptGraceElapsed()
        case .outputClosed: beginClose(.goingAway, viaQueue: false)
        case .sending(let message): sending(message)
        case .sendFailed(let description): if stage.isOpen { printError(description) }
        case .uploadFinished: startInput()
        case .pingFinished(let result, let payload): pingFinished(result, requestedPayload: payload)
        case .certificatePins(let line): printStatus([line])
        }
        return nil
    }

    /// Posts `event` after `delay`.
    func startTimer(after delay: Duration, posting event: SessionEvent) {
        let post = post
        tasks.addTask {
            do {
                try await Task.sleep(for: delay)
                post.yield(event)
            } catch {
                // Cancelled: the session is over.
            }
        }
    }
}
