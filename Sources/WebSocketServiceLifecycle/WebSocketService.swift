import FoundationEssentials
import ServiceLifecycle
import WebSocketStreams

/// A `Service` that keeps a `ReconnectingWebSocket` open and runs your handler with it,
/// until its `ServiceGroup` shuts down.
///
/// ```swift
/// let feed = WebSocketService(
///     to: "wss://upstream.example.org/feed",
///     onConnect: { connection in try await connection.send(.text(#"{"op":"subscribe"}"#)) }
/// ) { socket in
///     for await message in socket.messages {     // spans reconnects
///         await prices.apply(message)
///     }
/// }
/// let group = ServiceGroup(
///     services: [feed, httpServer],
///     gracefulShutdownSignals: [.sigterm, .sigint],
///     logger: logger)
/// try await group.run()
/// ```
///
/// **Graceful shutdown.** The socket closes with 1001 (going away), after which its
/// `messages` stream delivers what had already arrived and finishes. The handler's
/// `for await` loop ends, so the handler returns, and so does ``run()``, once the closing
/// handshake is over. Nothing is cancelled: a handler busy with a message finishes it.
///
/// **Cancellation.** When the task running ``run()`` is cancelled (the group is cancelled,
/// or its graceful shutdown timed out), the socket closes with 1001 as well, the handler's
/// task is cancelled, and ``run()`` returns without an error (a `CancellationError` the
/// handler throws then is not rethrown; any other error is).
///
/// **Errors.** An error the handler throws closes the socket with 1001 and is rethrown by
/// ``run()``, so the group reacts as its `failureTerminationBehavior` says. When the
/// handler returns on its own, the socket is closed with 1000 (normal closure) if it is
/// still open. When the socket has ended with an error retrying cannot fix (a refused
/// handshake, an untrusted certificate, `ReconnectPolicy.maxAttempts` reached), its
/// `messages` stream finishes, and once the handler returns ``run()`` throws that
/// `WebSocketError`.
///
/// Run a service once: its socket ends with the run.
public struct WebSocketService: Service {
    /// What the service runs with its socket: typically a `for await` loop over
    /// `ReconnectingWebSocket/messages`.
    ///
    /// The handler should return when `messages` finishes (the socket has ended); sends
    /// after that throw the socket's end error.
    public typealias Handler = @Sendable (ReconnectingWebSocket) async throws -> Void

    /// The socket the service runs. Other parts of the app may send with it (`send(_:)`
    /// waits while the socket reconnects); only the handler should iterate its `messages`.
    public let socket: ReconnectingWebSocket

    private let handler: Handler
    /// The URL as logs may show it; `nil` for a socket made by the caller.
    private let loggableURL: String?

    /// Creates a service that connects to `url` once it runs.
    ///
    /// - Parameters:
    ///   - url: A `ws://` or `wss://` URL.
    ///   - configuration: Used for every connection.
    ///   - policy: When to reconnect and how long to wait; see `ReconnectPolicy`.
    ///   - eventLoop: The loop that services the connections.
    ///   - onConnect: Runs after every (re)connect, before queued messages are sent: send
    ///     subscriptions or credentials here. If it throws, that connection is closed (1001)
    ///     and the socket reconnects.
    ///   - handler: Runs once the service runs, with the socket; see ``Handler``.
    public init(
        to url: String,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil,
        handler: @escaping Handler
    ) {
        let socket = ReconnectingWebSocket(
            to: url, configuration: configuration, policy: policy, eventLoop: eventLoop, onConnect: onConnect)
        self.init(socket: socket, loggableURL: Self.loggableURL(url), handler: handler)
    }

    /// Creates a service that connects to `url` once it runs; see
    /// ``init(to:configuration:policy:eventLoop:onConnect:handler:)-(String,_,_,_,_,_)``.
    public init(
        to url: URL,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        policy: ReconnectPolicy = ReconnectPolicy(),
        eventLoop: WebSocketEventLoop? = nil,
        onConnect: (@Sendable (WebSocket) async throws -> Void)? = nil,
        handler: @escaping Handler
    ) {
        self.init(
            to: url.absoluteString, configuration: configuration, policy: policy, eventLoop: eventLoop,
            onConnect: onConnect, handler: handler)
    }

    /// Creates a service that runs a socket you made, for what the other initializers do
    /// not offer (an injected clock, say). The service owns the socket from then on: it
    /// closes it when it ends.
    ///
    /// - Parameters:
    ///   - socket: A socket nothing has used yet, or that has not ended.
    ///   - handler: Runs once the service runs, with the socket; see ``Handler``.
    public init(socket: ReconnectingWebSocket, handler: @escaping Handler) {
        self.init(socket: socket, loggableURL: nil, handler: handler)
    }

    private init(socket: ReconnectingWebSocket, loggableURL: String?, handler: @escaping Handler) {
        self.socket = socket
        self.handler = handler
        self.loggableURL = loggableURL
    }

    /// Runs the handler with the socket until graceful shutdown, cancellation, the
    /// handler's return, or its error; returns once the socket has closed.
    ///
    /// - Throws: The handler's error, or the `WebSocketError` that ended the socket for
    ///   good; never `CancellationError` for a cancelled run.
    public func run() async throws {
        let (shutdown, requestShutdown) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingDiscardingTaskGroup { group in
            // The graceful shutdown handler cannot await, so the close runs here. The stream
            // ends when shutdown is requested, when the handler has ended, or when this task
            // is cancelled; closing an ended socket does nothing.
            group.addTask { [socket] in
                for await _ in shutdown {}
                await socket.close(code: .goingAway, reason: "")
            }
            defer { requestShutdown.finish() }
            try await runHandler {
                requestShutdown.finish()
            }
        }
        if !Task.isCancelled, case .failed(let error) = socket.state {
            throw error
        }
    }

    /// Runs the handler, calling `onGracefulShutdown` on graceful shutdown, and closes the
    /// socket as its outcome says.
    private func runHandler(onGracefulShutdown: @escaping @Sendable () -> Void) async throws {
        do {
            try await withGracefulShutdownHandler {
                try await handler(socket)
            } onGracefulShutdown: {
                onGracefulShutdown()
            }
        } catch is CancellationError where Task.isCancelled {
            // A cancelled run ends without an error.
        } catch {
            await socket.close(code: .goingAway, reason: "")
            throw error
        }
        let isEnding = Task.isCancelled || Task.isShuttingDownGracefully
        await socket.close(code: isEnding ? .goingAway : .normalClosure, reason: "")
    }

    /// `scheme://host[:port]/path`: the URL without user info, query or fragment, which may
    /// hold credentials and must not reach the logs.
    private static func loggableURL(_ url: String) -> String {
        var rest = Substring(url)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        guard let schemeEnd = rest.firstRange(of: "://") else { return String(rest) }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = rest[authorityStart...].firstIndex(of: "/") ?? rest.endIndex
        if let at = rest[authorityStart..<authorityEnd].lastIndex(of: "@") {
            rest.removeSubrange(authorityStart...at)
        }
        return String(rest)
    }
}

extension WebSocketService: CustomStringConvertible {
    /// `WebSocketService(ws://host:port/path)`, the name a `ServiceGroup` logs: the URL
    /// without user info, query or fragment, which may hold credentials. Just
    /// `WebSocketService` for a service made with ``init(socket:handler:)``.
    public var description: String {
        loggableURL.map { "WebSocketService(\($0))" } ?? "WebSocketService"
    }
}
