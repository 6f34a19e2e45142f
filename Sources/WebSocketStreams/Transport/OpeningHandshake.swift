import SynchronizationSupport
import Logging
import WebSocketCore

/// The opening steps of one connection (TCP, an optional proxy tunnel, TLS, the HTTP
/// upgrade) and what each keeps: a value the transport moves along as bytes arrive.
struct OpeningHandshake {
    /// Where the connection is on its way to open.
    enum Step {
        /// Not started yet.
        case idle
        /// TCP connect under way.
        case connecting
        /// `CONNECT` sent to the proxy; its answer is being read.
        case tunnelling(HTTPResponseParser)
        /// The SOCKS5 proxy's opening exchange is under way.
        case negotiatingSOCKS(SOCKS5Handshake)
        /// TLS handshake under way.
        case securing
        /// The upgrade request went out; the server's answer (a refusal's body included) is being read.
        case upgrading(UpgradeAnswer)
        /// The WebSocket protocol runs.
        case open
        /// The socket is gone.
        case ended
    }

    var step: Step = .idle
    /// The upgrade request's `Sec-WebSocket-Key`, that the server's answer must match.
    let key: String
    /// The upgrade request as written; emptied once it is handed to the socket, so an open
    /// connection does not carry it.
    var requestBytes: [UInt8]
    /// Removes this connection's credentials from log lines (nil when it has none or
    /// ``WebSocketConfiguration/redactsSecretsInLogs`` is off).
    let redactor: SecretRedactor?
    /// The error a dropped handshake reports, when it is not the generic one.
    var error: WebSocketError?
    /// The lws log level this connection claimed while the loop holds it.
    var claimedLogLevel: Logger.Level?
    /// How long each step took; `nil` once the connection is open.
    var clock: ConnectClock?

    init(url: WebSocketURL, configuration: WebSocketConfiguration, clock: ConnectClock) {
        self.clock = clock
        let request = HandshakeRequest(url: url, configuration: configuration, keyBytes: Crypto.randomBytes(count: 16))
        let headers = HandshakeRequest.serverHeaders(url: url, configuration: configuration)
        key = request.key
        requestBytes = request.bytes
        let redactor = SecretRedactor(
            url: url, headers: headers.merging(configuration.headers) { kept, _ in kept },
            sensitiveHeaders: configuration.sensitiveHeaders)
        self.redactor = configuration.redactsSecretsInLogs && !redactor.secrets.isEmpty ? redactor : nil
    }
}
