import ArgumentParser
import Logging
import ServiceLifecycle
import UnixSignals
import WebSocketServiceLifecycle
import WebSocketStreams

/// A server-side app's upstream feed: a `ServiceGroup` running one `WebSocketService`
/// that logs every message it receives, until SIGTERM or Ctrl-C.
///
/// ```sh
/// swift run TestServer --port 9001 &
/// swift run WebSocketServiceExample 'ws://127.0.0.1:9001/push?count=3'
/// swift run WebSocketServiceExample ws://127.0.0.1:9001/echo --subscribe hello
/// ```
///
/// On SIGTERM (or SIGINT) the group shuts down gracefully: the socket closes with 1001
/// (going away), the handler's loop ends, and the process exits with status 0.
@main
struct ServiceExample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "WebSocketServiceExample",
        abstract: "Logs the messages of a WebSocket feed, run as a service until SIGTERM or SIGINT.")

    @Argument(help: "The feed's ws:// or wss:// URL.")
    var url: String

    @Option(help: "A text message to send after every (re)connect, e.g. a subscription.")
    var subscribe: String?

    func run() async throws {
        let logger = Logger(label: "WebSocketServiceExample")
        let subscription = subscribe
        let feed = WebSocketService(
            to: url,
            onConnect: { connection in
                if let subscription { try await connection.send(.text(subscription)) }
            }
        ) { socket in
            for await message in socket.messages {
                logger.info("received \(message)")   // e.g. received text("hello")
            }
            logger.info("socket ended: \(socket.state)")
        }
        let group = ServiceGroup(
            services: [feed],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }
}
