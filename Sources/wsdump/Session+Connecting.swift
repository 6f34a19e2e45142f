import Foundation
import TaskLifetimes
import WebSocketStreams

/// Connecting: the direct connection or the reconnecting socket, and what opening shows.
extension Session {
    /// Starts connecting: a ``ReconnectingLink`` at once with `--reconnect`, otherwise one
    /// ``WebSocket/connect(to:configuration:)`` in the connecting stage's task.
    func startConnecting() {
        let post = post
        // A person at a terminal sees what the (up to connectTimeout) wait is for.
        if isInteractive || console.errorIsTerminal { printStatus(["connecting to \(redactor.url(options.url)) ..."]) }
        let configuration = observedConfiguration()
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
            tasks.addTask { [socket = reconnecting.socket] in
                for await state in socket.states { post.yield(.state(state)) }
            }
            linkOpened(reconnecting, directConnection: nil)
        } else {
            guard case .connecting(let connecting) = stage else { return }
            connecting.attempt.addTask { [url = options.url, headerCommand = options.headerCommand] in
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

    /// The configuration with the observers `-v`, `-vv` and `--jsonl` need.
    private func observedConfiguration() -> WebSocketConfiguration {
        let post = post
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
        return configuration
    }

    /// The direct connection opened.
    func opened(_ connection: WebSocket) {
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
        linkOpened(DirectLink(connection: connection), directConnection: connection, openedAt: .now)
    }

    /// A `--reconnect` connection opened (the first or a later one).
    func reconnected(_ connection: WebSocket) {
        stage.updateConnected { $0.openedAt = $0.openedAt ?? .now }
        if options.verbosity >= 1, connection.isTLSSessionResumed { printStatus(["TLS session resumed"]) }
        if options.verbosity >= 1 { printStatus(["timings: \(connection.connectTimings)"]) }
        if options.jsonLines {
            var record = JSONLineRecord(time: Self.unixTime, direction: .event, type: .open)
            record.url = redactor.url(connection.url)
            printData([record.encoded()])
        }
    }

    /// Starts receiving and sending over `link`, then reading input; a close asked for
    /// while connecting is done now.
    private func linkOpened(
        _ link: any SessionLink, directConnection: WebSocket?, openedAt: ContinuousClock.Instant? = nil
    ) {
        let pendingClose = if case .connecting(let connecting) = stage { connecting.pendingClose } else { WebSocketCloseCode?.none }
        let post = post
        let console = console
        if options.streamsMessages {
            link.startReceivingPieces(
                in: tasks,
                deliver: { piece in
                    post.yield(.receivedPiece(piece))
                    await console.waitForRoom()
                },
                ended: { post.yield(.receiveEnded) })
        } else {
            link.startReceiving(
                in: tasks,
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
        stage = .open(SessionStage.Connected(
            link: link, directConnection: directConnection, outgoing: queue, openedAt: openedAt,
            sentAnything: options.initialText != nil || options.file != nil || options.streamedFile != nil))
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

    /// Connecting failed: the error, with advice, and its exit status.
    func connectFailed(_ error: WebSocketError) -> ExitStatus {
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
}
