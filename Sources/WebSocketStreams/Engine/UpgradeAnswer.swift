import FoundationEssentials
import WebSocketCore

/// The server's answer to the upgrade request, read as its bytes arrive: the head, what it
/// means, and the body of a refusal. The transport and ``ClientEngine`` both read the answer
/// through this one value, so a refusal, an invalid 101 and their wording are decided once.
///
/// Sans-I/O: ``read(_:)`` takes what the socket (or TLS) produced and says whether the
/// protocol runs, the handshake failed, or more bytes are needed.
struct UpgradeAnswer {
    /// Where the reading stands.
    enum Stage {
        /// The head is being parsed.
        case head(HTTPResponseParser)
        /// The server refused (a status other than 101); its body is being collected.
        case refusal(HTTPResponseHead, HTTPBodyCollector)
        /// The answer was read to its end (opened or failed); nothing more is read here.
        case finished
    }

    /// What one ``read(_:)`` amounted to.
    enum Outcome {
        /// The answer is not complete yet.
        case needsMore
        /// A valid 101: the protocol runs. The bytes from `framesStart` on are the first frames.
        case upgraded(NegotiatedHandshake, framesStart: Int)
        /// The handshake failed: a refusal (with its body), an invalid 101, or an answer
        /// that is not HTTP.
        case failed(WebSocketError)
    }

    let url: WebSocketURL
    /// The request's `Sec-WebSocket-Key`.
    let key: String
    let offeredSubprotocols: [String]
    let offeredExtensions: [String]
    private let sha1: ([UInt8]) -> [UInt8]
    private(set) var stage: Stage = .head(HTTPResponseParser())
    /// The answer's head, once parsed (the wire-event observer reports it).
    private(set) var head: HTTPResponseHead?

    /// The reader for the answer to a request sent with `key` for `url` under `configuration`.
    init(url: WebSocketURL, key: String, configuration: WebSocketConfiguration, sha1: @escaping ([UInt8]) -> [UInt8]) {
        self.url = url
        self.key = key
        self.sha1 = sha1
        offeredSubprotocols = configuration.subprotocols
        offeredExtensions = configuration.compression.isEnabled ? ["permessage-deflate"] : []
    }

    /// Whether a refusal's body is being collected.
    var isReadingRefusal: Bool {
        if case .refusal = stage { return true }
        return false
    }

    /// Reads the next bytes of the answer.
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        switch stage {
        case .head(var parser):
            let parsed: (HTTPResponseHead, Int)?
            do {
                parsed = try parser.parse(bytes)
            } catch {
                stage = .finished
                if !url.isSecure, let first = bytes.first, first == 0x15 || first == 0x16 {
                    // A TLS alert or handshake record: the server expected a ClientHello.
                    return .failed(.connectionFailed(
                        "the server answered in TLS, not HTTP (\(url.hostHeader)): use wss:// for this server"))
                }
                return .failed(.connectionFailed("the server's answer to the upgrade request is not valid HTTP: \(error)"))
            }
            guard let (head, consumed) = parsed else {
                stage = .head(parser)
                return .needsMore
            }
            self.head = head
            return answered(head, rest: UnsafeRawBufferPointer(rebasing: bytes[consumed...]), restStart: consumed)
        case .refusal(let head, var body):
            if body.append(bytes) {
                stage = .finished
                return .failed(rejection(head, body: body))
            }
            stage = .refusal(head, body)
            return .needsMore
        case .finished:
            return .needsMore
        }
    }

    private mutating func answered(_ head: HTTPResponseHead, rest: UnsafeRawBufferPointer, restStart: Int) -> Outcome {
        switch HandshakeValidator.validate(
            head, key: key, sha1: sha1, offeredSubprotocols: offeredSubprotocols, offeredExtensions: offeredExtensions
        ) {
        case .success(let negotiated):
            stage = .finished
            return .upgraded(negotiated, framesStart: restStart)
        case .failure(.rejected):
            var body = HTTPBodyCollector(head: head)
            if body.append(rest) {
                stage = .finished
                return .failed(rejection(head, body: body))
            }
            stage = .refusal(head, body)
            return .needsMore
        case .failure(.invalid(let reason)):
            stage = .finished
            return .failed(.connectionFailed("\(reason) (\(url.hostHeader))"))
        }
    }

    /// The refusal as far as its body came, for a connection that closed or ran out of time
    /// while the body was read; `nil` when no refusal is being read.
    mutating func refusalCutShort(connectionClosed: Bool) -> WebSocketError? {
        guard case .refusal(let head, var body) = stage else { return nil }
        if connectionClosed { body.connectionClosed() }
        stage = .finished
        return rejection(head, body: body)
    }

    /// The typed error for an upgrade the server refused. A success or a 404 means no
    /// WebSocket endpoint is at that path (a plain HTTP server, or the wrong path): the error
    /// says so, rather than only the status.
    func rejection(_ head: HTTPResponseHead, body: HTTPBodyCollector) -> WebSocketError {
        let rejected = WebSocketError.handshakeRejected(status: head.status, headers: head.headerDictionary, body: Data(body.body))
        guard (200..<300).contains(head.status) || head.status == 404 else { return rejected }
        return WebSocketError(
            // The path without its query, which may carry a token.
            code: .handshakeRejected,
            reason: "no WebSocket endpoint at \(url.pathAndQuery.prefix { $0 != "?" }) on \(url.hostHeader)",
            httpStatus: rejected.httpStatus, headers: rejected.headers, body: rejected.body)
    }
}
