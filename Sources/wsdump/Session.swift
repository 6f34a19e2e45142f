import Foundation
import Glibc
import WebSocketStreams

/// One wsdump run: connects, sends what is typed or piped in, prints what arrives, closes,
/// and decides the exit status.
///
/// Everything that happens (a message, a line of input, a signal, a timer) is posted as a
/// ``SessionEvent`` to one stream, and ``run()`` handles the events one at a time, so the
/// session's state is only ever touched by that loop. The loop never waits for the
/// network: connecting, receiving, sending (``OutgoingQueue``) and closing run in tasks of
/// their own and report back with events.
///
/// The session ends when the connection has ended (after a close handshake, an error, or
/// `--reconnect`'s terminal state), when connecting fails, or on a second Ctrl-C.
final class Session {
    /// Where the session is.
    enum Phase {
        /// Waiting for the opening handshake.
        case connecting
        /// Open: input is sent.
        case open
        /// A close has been asked for; waiting for the connection to end.
        case closing
    }

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

    var phase = Phase.connecting
    var link: (any SessionLink)?
    var directConnection: WebSocket?
    var outgoing: OutgoingQueue?
    var connectTask: Task<Void, Never>?
    var openedAt: ContinuousClock.Instant?
    /// A close asked for while still connecting, done once the connection opens.
    var pendingClose: WebSocketCloseCode?
    /// The code of the close wsdump started, once it has.
    var requestedCloseCode: WebSocketCloseCode?
    var receivedCount = 0
    var timedOut = false
    var interrupts = 0
    /// The codes ``closeNow(_:reason:)`` has closed with (each at most once).
    var closedNow: Set<WebSocketCloseCode> = []
    var inputStarted = false
    var inputEnded = false
    /// Whether anything was sent or queued: an input line, `-t`, `--file` or `--send-file`.
    var sentAnything = false
    var receiveEnded = false
    /// The peer's close frame, held until every message read before it has been shown.
    var heldIncomingClose: WebSocketWireEvent?
    /// `--reconnect`: the socket's terminal state, once reached.
    var finalState: ReconnectingWebSocket.State?
    /// The exit status of a `--header-command` that failed; wsdump ends with it.
    private(set) var headerCommandStatus: Int32?
    var editor = LineEditor()
    var keyDecoder = KeyDecoder()
    var signalWatcher: SignalWatcher?
    /// `--record`: the conversation's file.
    let recorder: ConversationRecorder?

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
            outgoing?.cancel()
        } else {
            await outgoing?.stop()
        }
        status = reportUndelivered(status)
        if options.requireReply, receivedCount == 0, status == .normalClose {
            printError("no message was received (--require-reply)")
            status = .nothingReceived
        }
        await console.flush()
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
            receiveEnded = true
            if let close = heldIncomingClose {
                heldIncomingClose = nil
                wireEvent(close)
            }
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
        case .sendFailed(let description): if phase == .open { printError(description) }
        case .uploadFinished: startInput()
        case .pingFinished(let result, let payload): pingFinished(result, requestedPayload: payload)
        case .certificatePins(let line): printStatus([line])
        }
        return nil
    }

    // MARK: - Connecting

    private func startConnecting() {
        let post = post
        // A person at a terminal sees what the (up to connectTimeout) wait is for.
        if isInteractive || console.errorIsTerminal { printStatus(["connecting to \(redactor.url(options.url)) ..."]) }
        var configuration = options.configuration
        if options.verbosity >= 2 || options.jsonLines {
            configuration.wireEventObserver = { event in post.yield(.wire(event)) }
        } else if options.verbosity == 1 {
            // -v shows each redirect: the answers to the upgrade are enough.
            configuration.wireEventObserver = { event in
                if event.kind == .handshakeResponseReceived { post.yield(.wire(event)) }
            }
        }
        if options.verbosity >= 1, configuration.tls.verifyPeer == nil {
            // -v shows the chain's pins, ready for --pin.
            configuration.tls.verifyPeer = WebSocketTLSVerifier { peer in
                post.yield(.certificatePins("pins: " + CertificatePins.describe(peer.publicKeyPins)))
            }
        }
        if options.reconnect {
            let reconnecting = ReconnectingLink(
                url: options.url, configuration: configuration,
                headerCommand: options.headerCommand.map { command in
                    { @Sendable () async throws -> [(name: String, value: String)] in
                        do throws(HeaderCommand.Failure) {
                            return try await command.run()
                        } catch {
                            post.yield(.headerCommandFailed(error))
                            throw error
                        }
                    }
                }
            ) { connection in
                post.yield(.reconnected(connection))
            }
            Task { [socket = reconnecting.socket] in
                for await state in socket.states { post.yield(.state(state)) }
            }
            linkOpened(reconnecting)
        } else {
            connectTask = Task { [url = options.url, headerCommand = options.headerCommand] in
                var configuration = configuration
                if let headerCommand {
                    do throws(HeaderCommand.Failure) {
                        for header in try await headerCommand.run() { configuration.headers[header.name] = header.value }
                    } catch {
                        post.yield(.headerCommandFailed(error))
                        return
                    }
                }
                do {
                    post.yield(.opened(try await WebSocket.connect(to: url, configuration: configuration)))
                } catch let error as WebSocketError {
                    post.yield(.connectFailed(error))
                } catch {
                    post.yield(.connectCancelled)
                }
            }
        }
    }

    private func opened(_ connection: WebSocket) {
        directConnection = connection
        openedAt = .now
        var details: [String] = []
        if let subprotocol = connection.subprotocol { details.append("subprotocol: \(subprotocol)") }
        if let extensions = connection.extensions { details.append("extensions: \(extensions)") }
        if options.verbosity >= 1, connection.isTLSSessionResumed { details.append("TLS session resumed") }
        let url = redactor.url(connection.url)
        recorder?.opened(url: url, subprotocol: connection.subprotocol)
        printStatus(["connected to \(url)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")])
        if options.verbosity >= 1 { printStatus(["timings: \(connection.connectTimings)"]) }
        if options.jsonLines {
            var record = JSONLineRecord(time: Self.unixTime, direction: .event, type: .open)
            record.url = url
            printData([record.encoded()])
        }
        linkOpened(DirectLink(connection: connection))
    }

    private func reconnected(_ connection: WebSocket) {
        openedAt = openedAt ?? .now
        if options.verbosity >= 1, connection.isTLSSessionResumed { printStatus(["TLS session resumed"]) }
        if options.verbosity >= 1 { printStatus(["timings: \(connection.connectTimings)"]) }
        if options.jsonLines {
            var record = JSONLineRecord(time: Self.unixTime, direction: .event, type: .open)
            record.url = redactor.url(connection.url)
            printData([record.encoded()])
        }
    }

    /// Starts receiving and sending over `link`, then reading input.
    private func linkOpened(_ link: any SessionLink) {
        self.link = link
        phase = .open
        let post = post
        let console = console
        if options.streamsMessages {
            link.startReceivingPieces(
                deliver: { piece in
                    post.yield(.receivedPiece(piece))
                    await console.waitForRoom()
                },
                ended: { post.yield(.receiveEnded) })
        } else {
            link.startReceiving(
                deliver: { message in
                    post.yield(.received(message))
                    await console.waitForRoom()
                },
                ended: { post.yield(.receiveEnded) })
        }
        let showsProgress = console.errorIsTerminal && !options.jsonLines && !options.reconnect
        let queue = OutgoingQueue(
            link: link, credits: credits, upload: FileUpload(console: showsProgress ? console : nil),
            post: { post.yield($0) })
        outgoing = queue
        sentAnything = options.initialText != nil || options.file != nil || options.streamedFile != nil
        if let text = options.initialText { queue.enqueue(.message(.text(text), fromInput: false)) }
        if isInteractive { printStatus(["type /help for commands; Ctrl-D closes, Ctrl-C quits"]) }
        if let file = options.file {
            queue.enqueue(.file(path: file))
        } else if let file = options.streamedFile {
            queue.enqueue(.streamedFile(path: file))
        } else {
            startInput()
        }
        if let pendingClose { beginClose(pendingClose, viaQueue: false) }
    }

    private func connectFailed(_ error: WebSocketError) -> ExitStatus {
        if options.jsonLines { printData([JSONLineRecord.failure(error.description, time: Self.unixTime).encoded()]) }
        if options.verbosity >= 2, let body = error.body, !body.isEmpty {
            printStatus(Self.bodyPreview(body))
        }
        printError(ErrorAdvice.line(for: error, options: options))
        return ExitStatus.forFailure(error)
    }

    /// The first lines of a refused handshake's body, for `-vv` (what the server said, often why).
    static func bodyPreview(_ body: Data, lines limit: Int = 5) -> [String] {
        let lines = String(decoding: body.prefix(4096), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        var preview = ["--- response body (\(body.count) bytes) ---"]
        preview += lines.prefix(limit).map { String($0.prefix(200)).replacingOccurrences(of: "\r", with: "") }
        if lines.count > limit { preview.append("...") }
        preview.append("-----------------------")
        return preview
    }

    /// Posts `event` after `delay`.
    func startTimer(after delay: Duration, posting event: SessionEvent) {
        let post = post
        Task {
            try? await Task.sleep(for: delay)
            post.yield(event)
        }
    }
}
