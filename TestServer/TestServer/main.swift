import ArgumentParser
import Dispatch
import Glibc
import Logging
import Synchronization
import SynchronizationSupport
import WebSocketTestServer

/// `swift run TestServer --port 9001 [--tls]`: serves the test routes until Ctrl-C.
@main
struct TestServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "TestServer",
        abstract: "A local WebSocket server with routes that misbehave on purpose.",
        discussion: """
            Routes: /echo, /push?count=&size=&type=, /close?code=&reason=&after=, /drop?after=, \
            /reject?status=&body=, /redirect?to=&hops=&loop=1, /slow?ms=, /hang, /stall, /headers, /bad-utf8?split=1, /uncompressed, \
            /huge-headers, /frame-echo (every frame back as it arrives, without lws's ws role), and \
            /hostile/KIND, which breaks RFC 6455 byte by byte. KIND is garbage?seed=&count=, reserved-bits, \
            unknown-opcode, masked, fragmented-control, huge-length, bad-close-code?code=, long-close-reason, \
            bad-utf8-fragments, ping-flood?count=, slowloris?ms= or fuzz?seed=&count=.

            With --tls, the raw routes (/slow, /hang, /uncompressed, /huge-headers, /frame-echo and \
            /hostile/KIND) are served on a second port, printed at start, where the server runs TLS itself. \
            That port also serves /tls/KIND, which breaks TLS after the 101: truncated-record (a record cut \
            short, then a FIN), reset-mid-record (half a record, then a reset) or close-notify (close_notify \
            without a close frame).

            With --replay FILE, every path plays the server's side of a conversation recorded with \
            `wsdump --record FILE`: each server message once the client messages recorded before it \
            have arrived (equal, in order, unless --replay-loose), at the recorded gaps (unless \
            --replay-fast), then the recorded ending. A client that diverges gets a 1008 close whose \
            reason says where. The recording is checked at start: a line that is not JSON, an unknown \
            schema version or bad base64 is refused, naming the line.

            Prints its URL, then serves until interrupted (Ctrl-C or SIGTERM).
            """)

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port: Int = 9001

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Flag(help: "Serve wss:// with a certificate generated at start (its CA file is printed).")
    var tls = false

    @Flag(name: .customLong("no-compression"), help: "Do not negotiate permessage-deflate.")
    var noCompression = false

    @Option(name: .customLong("port-file"), help: "Write the bound port to this file once listening.")
    var portFile: String?

    @Option(name: .customLong("drop-every"), help: "Drop every connection (no close frame) every SECONDS, to watch clients reconnect.")
    var dropEvery: Double?

    @Option(name: .customLong("unix-socket"), help: "Also listen on this Unix domain socket (ws+unix:// clients).")
    var unixSocket: String?

    @Option(help: "Play the server's side of this recording (wsdump --record FILE) on every path.")
    var replay: String?

    @Flag(name: .customLong("replay-loose"), help: "With --replay: any client message stands for the recorded one (only count and order matter).")
    var replayLoose = false

    @Flag(name: .customLong("replay-fast"), help: "With --replay: send the server's messages without the recorded gaps.")
    var replayFast = false

    @Flag(help: "Log libwebsockets' server lines to stderr.")
    var verbose = false

    func validate() throws {
        if let dropEvery, dropEvery <= 0 { throw ValidationError("--drop-every must be positive") }
        if replay == nil, replayLoose || replayFast { throw ValidationError("--replay-loose and --replay-fast need --replay FILE") }
    }

    func run() async throws {
        // As many connections as the process may hold: the soft descriptor limit up to the
        // hard one, before the loop sizes its tables (wsbench W7 opens 15,000 at once).
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        var logger = Logger(label: "TestServer")
        logger.logLevel = verbose ? .debug : .critical
        var replayHandler: WebSocketTestServer.TestServer.Handler?
        if let replay {
            let recording: WebSocketTestServer.TestServer.Recording
            do {
                recording = try .init(contentsOfFile: replay)
            } catch {
                throw ValidationError("--replay: \(error.description)")
            }
            replayHandler = .replaying(recording, matching: replayLoose ? .loose : .content, timing: replayFast ? .immediate : .recorded)
            print("Replaying \(replay) (\(recording.events.count) events) on every path")
        }
        let server = try await WebSocketTestServer.TestServer.start(
            port: port, host: host, tls: tls ? .init() : nil, compression: !noCompression, recordTexts: false, logger: logger,
            unixSocketPath: unixSocket, handlers: [:], fallbackHandler: replayHandler)
        print("TestServer listening on \(server.url(path: "/"))")
        if let unixURL = server.unixSocketURL(path: "/") { print("and on \(unixURL)") }
        if let rawTLSPort = server.rawTLSPort {
            print("Raw TLS routes (/hostile/, /frame-echo, /tls/, ...) on port \(rawTLSPort), e.g. \(server.url(path: "/tls/close-notify"))")
        }
        if let caFile = server.caCertificateFile { print("CA certificate: \(caFile)") }
        if let portFile {
            let text = "\(server.port)\n"
            guard let file = fopen(portFile, "w") else { throw ValidationError("cannot write \(portFile)") }
            fputs(text, file)
            fclose(file)
        }
        fflush(nil)
        let dropper: Task<Void, Never>? = dropEvery.map { seconds in
            // Lives exactly as long as the server; cancelled right after the signal below.
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(seconds))
                    let dropped = await server.disconnectAll()
                    if dropped > 0 { print("dropped \(dropped) connection(s)") }
                    fflush(nil)
                }
            }
        }
        await waitForTerminationSignal()
        dropper?.cancel()
        // Stop accepting first: a connection that came in now would open, then be dropped
        // without a close frame by stop(); refused at accept, its client just retries.
        await server.refuseConnections(for: .seconds(3600))
        // A graceful restart: every client sees a 1001 close frame, not a dropped connection.
        let closed = await server.goAway()
        if closed > 0 { print("closed \(closed) connection(s) with 1001 (going away)") }
        await server.stop()
        print("TestServer stopped")
    }

    /// Suspends until SIGINT or SIGTERM arrives.
    private func waitForTerminationSignal() async {
        enum Wait {
            case idle
            case waiting(CheckedContinuation<Void, Never>)
            case signalled
        }
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let state = AnnotatedMutex(Wait.idle)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler {
                let waiting: CheckedContinuation<Void, Never>? = state.withLock { state in
                    defer { state = .signalled }
                    if case .waiting(let continuation) = state { return continuation }
                    return nil
                }
                waiting?.resume()
            }
            source.resume()
            return source
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let signalled: Bool = state.withLock { state in
                if case .signalled = state { return true }
                state = .waiting(continuation)
                return false
            }
            if signalled { continuation.resume() }
        }
        withExtendedLifetime(sources) {}
    }
}
