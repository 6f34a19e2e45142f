import CLibWebSockets
import DequeModule
import FoundationEssentials
import Glibc
import Logging
import SynchronizationSupport

/// The service-thread half of a client connection: it turns libwebsockets callbacks
/// into state machine events and carries out what the state machine asks for (write,
/// pause or resume reading, close).
///
/// Everything here runs on the loop's service thread (lws callbacks and posted work),
/// so its state needs no lock; the shared state lives in ``ClientConnection/machine``.
// @unchecked: confined to the loop's service thread; see above.
final class ClientTransport: @unchecked Sendable {
    /// An outgoing message being written, possibly in several fragments.
    struct OutgoingMessage {
        var message: WebSocketMessage
        var offset = 0
    }

    /// A message being received in several chunks.
    enum PartialMessage {
        case text([UInt8], UTF8Validator)
        case binary(Data)
    }

    /// Ping payloads start with a tag so pongs can be told apart.
    enum PingTag: UInt8 {
        case user = 0x55
        case keepalive = 0x4B
    }

    let configuration: WebSocketConfiguration
    let url: WebSocketURL
    let handshakeDeadline: ContinuousClock.Instant
    /// Request headers as NUL-terminated `name:` / value byte arrays, ready for lws.
    let headerLines: [(name: [UInt8], value: [UInt8])]
    /// Removes this connection's credentials from log lines (nil when it has none or
    /// ``WebSocketConfiguration/redactsSecretsInLogs`` is off).
    let redactor: SecretRedactor?

    var wsi: OpaquePointer?
    /// The lws log level this connection claimed while the loop holds it (service thread).
    var claimedLogLevel: Logger.Level?
    /// The upgrade request went out: the server may answer 101 at any moment from now.
    var handshakeSent = false
    var didOpen = false
    var ended = false
    var destroyed = false
    var handshakeStatus = 0
    var rejectionHeaders: [String: String] = [:]
    var tlsError: String?
    var subprotocol: String?
    var extensions: String?
    var responseHeaders: [String: String] = [:]

    var partial: PartialMessage?
    var partialSize = 0
    var readingPaused = false
    /// Set once this side decided to fail the connection; later chunks are ignored.
    var failing = false

    var writing = Deque<WebSocketMessage>()
    /// Storage for the next batch taken from the state machine (see `writeable`).
    var spareBatch = ConnectionStateMachine.WriteBatch()
    var inProgress: OutgoingMessage?
    var closeToSend: (code: WebSocketCloseCode, reason: String)?
    var closeTimerArmed = false
    /// A `WRITEABLE` callback was asked for and has not come yet: the socket is choked or
    /// more is queued, and writes wait for that callback.
    var writableRequested = false

    /// Whether permessage-deflate was negotiated (lws may then need several writable
    /// passes to drain one compressed message).
    var compressionActive = false
    /// Whether lws accepted the 64 KiB deflate output buffer.
    var deflateBufferRaised = false

    /// The ping waiting for its pong. Only one is sent at a time: a peer may answer just
    /// the latest of several pings (RFC 6455 5.5.3; lws does), which would leave the
    /// others unanswered forever.
    var pingInFlight: (tag: PingTag, id: UInt64, deadline: ContinuousClock.Instant)?
    /// When data last arrived while a ping was in flight: a peer that is sending is alive,
    /// even if its pong is still queued behind data this side has not read yet.
    var receivedWhilePinging: ContinuousClock.Instant?
    /// The keep-alive interval passed with no ping in flight: send one on the next writable pass.
    var keepaliveDue = false
    var keepaliveCounter: UInt64 = 0

    /// How long a close may take (queued messages, the close handshake) before the socket is dropped.
    static let closeTimeout: Duration = .seconds(10)
    /// How long a cancelled attempt waits for the server's answer to an upgrade request
    /// already sent, so an upgrade that completes meanwhile can be closed properly.
    static let abandonGrace: Duration = .seconds(1)

    init(configuration: WebSocketConfiguration, url: WebSocketURL, handshakeDeadline: ContinuousClock.Instant) {
        self.configuration = configuration
        self.url = url
        self.handshakeDeadline = handshakeDeadline
        var lines: [(name: [UInt8], value: [UInt8])] = []
        var headers = configuration.headers
        if let authorization = url.basicAuthorization, !headers.keys.contains(where: { $0.lowercased() == "authorization" }) {
            headers["Authorization"] = authorization
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            lines.append((Array((name.lowercased() + ":").utf8) + [0], Array(value.utf8) + [0]))
        }
        headerLines = lines
        let redactor = SecretRedactor(url: url, headers: headers)
        self.redactor = configuration.redactsSecretsInLogs && !redactor.secrets.isEmpty ? redactor : nil
    }

    // MARK: - Callbacks

    func handle(
        _ connection: ClientConnection, wsi: OpaquePointer, reason: lws_callback_reasons,
        user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int,
        loop: ClientLoop
    ) -> Int32 {
        self.wsi = wsi
        switch reason {
        case LWS_CALLBACK_CLIENT_RECEIVE:
            return receive(connection, input: input, length: length, loop: loop)
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            writableRequested = false
            return writeable(connection, loop: loop)
        case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
            return pong(connection, input: input, length: length)
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            handshakeSent = true
            return appendHeaders(input: input, length: length)
        case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
            recordHandshakeResponse()
        case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
            subprotocol = header(WSI_TOKEN_PROTOCOL)
            extensions = header(WSI_TOKEN_EXTENSIONS)
            responseHeaders = readResponseHeaders()
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            established(connection)
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            let message = input.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
            if handshakeStatus == 0 { recordHandshakeResponse() }
            if url.isSecure, tlsError == nil, !configuration.tls.allowUntrustedCertificates {
                // The verification callback did not run for us; ask the TLS session directly.
                var text: UnsafePointer<CChar>?
                let result = wss_tls_verify_result(wsi, &text)
                if result != 0, let text { tlsError = "\(String(cString: text)) (X509 error \(result))" }
            }
            end(connection, connectError: connectError(lwsMessage: message))
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            return peerClosed(connection, input: input, length: length)
        case LWS_CALLBACK_CLIENT_CLOSED, LWS_CALLBACK_CLOSED_CLIENT_HTTP:
            if didOpen { noteProtocolFailure(connection, wsi: wsi, loop: loop) }
            end(connection, connectError: nil)
        case LWS_CALLBACK_TIMER:
            return timerFired(connection)
        case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
            if length == 0, let user {
                var code: Int32 = 0
                let text = String(cString: wss_x509_store_error(user, &code))
                if tlsError == nil { tlsError = "\(text) (X509 error \(code))" }
            }
        case LWS_CALLBACK_WSI_DESTROY:
            destroyed = true
            end(connection, connectError: nil)
            self.wsi = nil
        default:
            break
        }
        return 0
    }

    // MARK: - Connecting

    /// Starts the handshake (service thread, from ``ClientLoop/open(_:)``).
    func connect(_ connection: ClientConnection, context: OpaquePointer, vhost: OpaquePointer, loop: ClientLoop) {
        if connection.machine.withLock({ $0.connectCancelled }) {
            loop.forget(connection)
            return
        }
        var info = lws_client_connect_info()
        info.context = context
        info.vhost = vhost
        info.port = Int32(url.port)
        info.ietf_version_or_minus_one = -1
        info.opaque_user_data = Unmanaged.passUnretained(connection).toOpaque()
        info.retry_and_idle_policy = UnsafePointer(LWSStatics.noValidityPings)
        // A 3xx answer to the upgrade is reported (handshakeRejected with its Location), not
        // followed: lws would re-send every header, credentials included, to the new host and
        // resolve it with a blocking lookup on the service thread.
        info.ssl_connection = Int32(LCCSCF_HTTP_NO_FOLLOW_REDIRECT.rawValue)
        if url.isSecure {
            var flags = Int32(LCCSCF_USE_SSL.rawValue | LCCSCF_HTTP_NO_FOLLOW_REDIRECT.rawValue)
            if configuration.tls.allowUntrustedCertificates {
                flags |= Int32(LCCSCF_ALLOW_SELFSIGNED.rawValue | LCCSCF_ALLOW_INSECURE.rawValue
                    | LCCSCF_ALLOW_EXPIRED.rawValue | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue)
            }
            info.ssl_connection = flags
        }
        let protocols = configuration.subprotocols.isEmpty ? nil : configuration.subprotocols.joined(separator: ", ")
        let created: OpaquePointer? = connection.connectAddress.withCString { address in
            url.pathAndQuery.withCString { path in
                url.hostHeader.withCString { host in
                    withOptionalCString(configuration.origin) { origin in
                        withOptionalCString(protocols) { protocols in
                            ClientLoop.protocolName.withCString { localProtocol in
                                info.address = address
                                info.path = path
                                info.host = host
                                info.origin = origin
                                info.protocol = protocols
                                info.local_protocol_name = localProtocol
                                return lws_client_connect_via_info(&info)
                            }
                        }
                    }
                }
            }
        }
        guard let created, !destroyed else {
            if !ended {
                end(connection, connectError: tlsError.map(WebSocketError.tlsFailure)
                    ?? .connectionFailed("libwebsockets could not start a connection to \(url.hostHeader)"))
            }
            // No WSI_DESTROY will come for a wsi that was never returned.
            if !destroyed { loop.forget(connection) }
            return
        }
        wsi = created
        if !ended {
            let remaining = max(.milliseconds(1), handshakeDeadline - .now)
            lws_set_timer_usecs(created, remaining.microseconds)
        }
    }

    private func appendHeaders(input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        guard let input, !headerLines.isEmpty, let wsi else { return 0 }
        let position = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
        guard let start = position.pointee else { return 0 }
        let end = start + length
        for (name, value) in headerLines {
            let added = name.withUnsafeBufferPointer { name in
                value.withUnsafeBufferPointer { value in
                    lws_add_http_header_by_name(wsi, name.baseAddress, value.baseAddress, Int32(value.count - 1), position, end)
                }
            }
            if added != 0 { return -1 }
        }
        return 0
    }

    private func recordHandshakeResponse() {
        guard let wsi else { return }
        handshakeStatus = Int(lws_http_client_http_response(wsi))
        guard handshakeStatus != 101, handshakeStatus != 0 else { return }
        rejectionHeaders = readResponseHeaders()
    }

    /// The response headers lws parsed, by canonical name (lws keeps only known headers).
    private func readResponseHeaders() -> [String: String] {
        let names: [(lws_token_indexes, String)] = [
            (WSI_TOKEN_HTTP_WWW_AUTHENTICATE, "WWW-Authenticate"), (WSI_TOKEN_HTTP_RETRY_AFTER, "Retry-After"),
            (WSI_TOKEN_HTTP_CONTENT_TYPE, "Content-Type"), (WSI_TOKEN_HTTP_LOCATION, "Location"),
            (WSI_TOKEN_HTTP_SERVER, "Server"), (WSI_TOKEN_HTTP_SET_COOKIE, "Set-Cookie"),
            (WSI_TOKEN_HTTP_CONTENT_LENGTH, "Content-Length"), (WSI_TOKEN_HTTP_DATE, "Date"),
            (WSI_TOKEN_UPGRADE, "Upgrade"), (WSI_TOKEN_CONNECTION, "Connection"),
            (WSI_TOKEN_ACCEPT, "Sec-WebSocket-Accept"), (WSI_TOKEN_PROTOCOL, "Sec-WebSocket-Protocol"),
            (WSI_TOKEN_EXTENSIONS, "Sec-WebSocket-Extensions"),
        ]
        var headers: [String: String] = [:]
        for (token, name) in names {
            if let value = header(token) { headers[name] = value }
        }
        return headers
    }

    /// A response header lws parsed, or `nil`.
    func header(_ token: lws_token_indexes) -> String? {
        guard let wsi else { return nil }
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private func established(_ connection: ClientConnection) {
        didOpen = true
        guard let wsi else { return }
        if extensions?.contains("permessage-deflate") == true {
            compressionActive = true
            // lws's deflate buffers default to 1 KiB, which splits every larger compressed
            // message into 1 KiB frames over as many writable passes; 64 KiB (2^16) instead.
            deflateBufferRaised = lws_set_extension_option(wsi, "permessage-deflate", "tx_buf_size", "16") == 0
            if !deflateBufferRaised {
                connection.logger.warning("libwebsockets kept its 1 KiB deflate buffer; compressed sends will be slow")
            }
        }
        let (waiter, abandoned, error) = connection.machine.withLock {
            $0.established(subprotocol: subprotocol, extensions: extensions, responseHeaders: responseHeaders)
        }
        if let interval = configuration.pingInterval {
            lws_set_timer_usecs(wsi, interval.microseconds)
        } else {
            lws_set_timer_usecs(wsi, LWS_SET_TIMER_USEC_CANCEL)
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume() }
        // `connect` was cancelled (or the loop is closing) as the handshake finished: close
        // the orphan properly.
        if abandoned { connection.wake() }
    }

    func connectError(lwsMessage: String?) -> WebSocketError {
        if handshakeStatus != 0 && handshakeStatus != 101 {
            return .handshakeRejected(status: handshakeStatus, headers: rejectionHeaders)
        }
        if let tlsError { return .tlsFailure(tlsError) }
        let message = lwsMessage ?? "the connection failed"
        if url.isSecure, message.hasPrefix("error:") || message.lowercased().contains("ssl")
            || message.lowercased().contains("tls") {
            return .tlsFailure("the TLS handshake with \(url.hostHeader) failed (\(message))")
        }
        return .connectionFailed("\(message) (\(url.hostHeader))")
    }

    /// Fails a connection that never reached lws (no vhost, loop gone).
    func failBeforeConnect(_ connection: ClientConnection, _ error: WebSocketError) {
        end(connection, connectError: error)
    }

    /// Ends the connection on this side: resumes or fails everything still waiting.
    func end(_ connection: ClientConnection, connectError: WebSocketError?) {
        guard !ended else { return }
        ended = true
        let error = connectError ?? (didOpen ? nil : self.connectError(
            lwsMessage: handshakeSent ? "the connection closed during the opening handshake" : "could not connect"))
        // A message partly handed to lws never reached the peer whole: unsent too.
        let unwritten = (inProgress.map { [$0.message] } ?? []) + writing.elementsAsArray
        inProgress = nil
        writing = []
        let finale = connection.machine.withLock { machine in
            if let error, !didOpen { return machine.connectFailed(error) }
            return machine.transportClosed(unwritten: unwritten)
        }
        finale?.run()
    }

    /// Whether lws failed the connection itself while neither side had closed: it does so
    /// when a frame breaks RFC 6455 (reserved bits, an unknown opcode, a fragmented or
    /// oversized control frame, a bad length), dropping TCP without a callback saying why.
    /// The socket still exists at `CLIENT_CLOSED`; if the peer had not closed it (no EOF
    /// waiting: `recv` would block, or, without TLS, unread data is waiting), the end was
    /// lws's decision, not the network's. It is then reported as 1002 (protocol error) with
    /// a typed error instead of a silent 1006.
    private func noteProtocolFailure(_ connection: ClientConnection, wsi: OpaquePointer, loop: ClientLoop) {
        // This side ended it (a failed write, a bad close frame) or the loop is shutting
        // down; or, with TLS, the peer ended the session (close_notify, FIN maybe later).
        guard !failing, !loop.isDestroyingContext else { return }
        if url.isSecure, wss_tls_peer_sent_close_notify(wsi) != 0 { return }
        let length = Int(lws_get_close_length(wsi))
        if length >= 2, let payload = lws_get_close_payload(wsi) {
            let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
            let detail = String(decoding: UnsafeBufferPointer(start: payload + 2, count: length - 2), as: UTF8.self)
            _ = connection.machine.withLock {
                $0.failedByLibrary(code: code, reason: detail.isEmpty ? Self.protocolFailureReason : detail)
            }
            return
        }
        switch Self.peekInput(on: wsi) {
        case .nothingYet: break
        case .unread where !url.isSecure: break
        case .unread, .endOrError: return
        }
        let noted = connection.machine.withLock { $0.failedByLibrary(code: .protocolError, reason: Self.protocolFailureReason) }
        if noted { connection.logger.debug("libwebsockets failed the connection: the peer broke the protocol") }
    }

    static let protocolFailureReason = "the peer broke the WebSocket protocol; libwebsockets failed the connection"

    /// What waits in the connection's socket, looked at without reading or blocking.
    private enum SocketInput {
        /// Bytes from the peer not read yet.
        case unread
        /// Nothing: the peer has neither sent more nor closed.
        case nothingYet
        /// The peer closed (EOF), the socket failed, or there is none.
        case endOrError
    }

    private static func peekInput(on wsi: OpaquePointer) -> SocketInput {
        let descriptor = lws_get_socket_fd(wsi)
        guard descriptor >= 0 else { return .endOrError }
        var byte: UInt8 = 0
        let peeked = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if peeked > 0 { return .unread }
        return peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .nothingYet : .endOrError
    }

    // MARK: - Service requests

    /// Carries out what user tasks asked for (service thread, from posted work).
    func service(_ connection: ClientConnection, requests: ConnectionStateMachine.ServiceRequests, loop: ClientLoop) {
        guard let wsi, !ended, !destroyed else { return }
        if requests.contains(.abort), !didOpen {
            // Before the upgrade request went out, drop the attempt at once (the timer ends
            // it). After, the server may already have upgraded: give its answer a moment, so
            // a 101 is closed properly with 1001 (see `established`) instead of dropped.
            let grace = handshakeSent ? min(Self.abandonGrace, max(.milliseconds(1), handshakeDeadline - .now)) : .microseconds(1)
            lws_set_timer_usecs(wsi, grace.microseconds)
            return
        }
        if requests.contains(.resumeReading), readingPaused {
            readingPaused = false
            lws_rx_flow_control(wsi, 1)
            rearmKeepalive()
        }
        if requests.contains(.write), didOpen {
            if !closeTimerArmed, connection.machine.withLock({ $0.isClosingLocally }) {
                closeTimerArmed = true
                lws_set_timer_usecs(wsi, Self.closeTimeout.microseconds)
            }
            if mayWriteDirectly(wsi) {
                writeDirectly(connection, loop: loop)
            } else {
                requestWritable(wsi)
            }
        }
    }

    // MARK: - Timers

    private func timerFired(_ connection: ClientConnection) -> Int32 {
        guard !ended else { return 0 }
        if !didOpen {
            let abandoned = connection.machine.withLock { $0.connectCancelled || $0.isClosingLocally }
            end(connection, connectError: abandoned ? .connectionFailed("closed before the handshake finished") : .timedOut)
            return -1
        }
        if closeTimerArmed {
            connection.logger.debug("close did not finish in \(Self.closeTimeout); dropping the socket")
            return -1
        }
        guard let wsi else { return 0 }
        let now = ContinuousClock.now
        if let inFlight = pingInFlight, !readingPaused {
            if now >= inFlight.deadline, let lastData = receivedWhilePinging, lastData + configuration.pongTimeout > now {
                // Data kept arriving: the pong is late because of our own reading, not the peer.
                pingInFlight?.deadline = lastData + configuration.pongTimeout
                lws_set_timer_usecs(wsi, (lastData + configuration.pongTimeout - now).microseconds)
                return 0
            }
            if now >= inFlight.deadline, Self.peekInput(on: wsi) == .unread {
                // The deadline passed while this thread was not running (a loaded machine):
                // bytes the peer sent wait unread, maybe the pong itself. Read them first.
                receivedWhilePinging = now
                pingInFlight?.deadline = now + configuration.pongTimeout
                lws_set_timer_usecs(wsi, configuration.pongTimeout.microseconds)
                return 0
            }
            if now >= inFlight.deadline {
                connection.machine.withLock { $0.failed(with: .pongTimeout, closeCode: nil) }
                connection.logger.debug("no pong within \(configuration.pongTimeout); dropping the connection")
                return -1
            }
            lws_set_timer_usecs(wsi, (inFlight.deadline - now).microseconds)
            return 0
        }
        // Reading is paused (a slow consumer): pongs cannot arrive; wait for reading to resume.
        if readingPaused { return 0 }
        // The keep-alive interval passed; the ping's own deadline is armed when it is written.
        keepaliveDue = true
        requestWritable(wsi)
        return 0
    }

    /// Restarts the keep-alive after reading resumed: a ping in flight gets a fresh pong
    /// deadline, otherwise the next keep-alive ping is a full interval away.
    private func rearmKeepalive() {
        guard let wsi, !closeTimerArmed, didOpen else { return }
        if pingInFlight != nil {
            pingInFlight?.deadline = .now + configuration.pongTimeout
            lws_set_timer_usecs(wsi, configuration.pongTimeout.microseconds)
        } else if let interval = configuration.pingInterval {
            lws_set_timer_usecs(wsi, interval.microseconds)
        }
    }

    /// Records a ping just written and arms its pong deadline.
    func pingWritten(tag: PingTag, id: UInt64) {
        configuration.controlFrameObserver?(.pingSent(keepalive: tag == .keepalive))
        let deadline = ContinuousClock.now + configuration.pongTimeout
        pingInFlight = (tag, id, deadline)
        receivedWhilePinging = nil
        if let wsi, !closeTimerArmed, !readingPaused { lws_set_timer_usecs(wsi, configuration.pongTimeout.microseconds) }
    }

    /// A pong arrived: if it answers the ping in flight, resolve that ping and go back to
    /// the keep-alive interval. Unsolicited pongs (allowed as heartbeats) are ignored.
    private func pong(_ connection: ClientConnection, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        let now = ContinuousClock.now
        guard let inFlight = pingInFlight, let wsi, let input, length == 9,
              input.load(as: UInt8.self) == inFlight.tag.rawValue,
              UInt64(bigEndian: input.loadUnaligned(fromByteOffset: 1, as: UInt64.self)) == inFlight.id
        else { return 0 }
        pingInFlight = nil
        receivedWhilePinging = nil
        configuration.controlFrameObserver?(.pongReceived(roundTrip: now - (inFlight.deadline - configuration.pongTimeout)))
        if !closeTimerArmed {
            if let interval = configuration.pingInterval {
                lws_set_timer_usecs(wsi, interval.microseconds)
            } else {
                lws_set_timer_usecs(wsi, LWS_SET_TIMER_USEC_CANCEL)
            }
        }
        let (resolved, morePings) = connection.machine.withLock { machine in
            (inFlight.tag == .user ? machine.pong(id: inFlight.id, at: now) : nil, machine.hasUnsentPing)
        }
        if let (waiter, roundTrip) = resolved { waiter.resume(returning: roundTrip) }
        if morePings { requestWritable(wsi) }
        return 0
    }

    // MARK: - Peer close

    /// The peer's close frame arrived. lws echoes it when this returns 0 (lws itself fails
    /// reserved codes below 5000; codes from 5000 up are undefined, not forbidden, and are
    /// echoed). A reason that is not valid UTF-8 fails the connection instead (RFC 6455
    /// 7.1.6; lws checks it only with `LWS_SERVER_OPTION_VALIDATE_UTF8`): returning -1
    /// makes lws drop the socket without echoing the close.
    private func peerClosed(_ connection: ClientConnection, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        var code = WebSocketCloseCode.noStatusReceived
        var reason = ""
        if let input, length >= 2 {
            let bytes = input.assumingMemoryBound(to: UInt8.self)
            code = WebSocketCloseCode(rawValue: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
            let reasonBytes = UnsafeBufferPointer(start: bytes + 2, count: length - 2)
            guard let text = String(validating: reasonBytes, as: UTF8.self) else {
                return failOnBadClose(connection, code: .invalidFramePayloadData, reason: "invalid UTF-8 in the peer's close reason")
            }
            reason = text
        }
        configuration.controlFrameObserver?(.closeReceived(code: code, reason: reason))
        let (senders, error) = connection.machine.withLock { machine in
            machine.peerClosed(code: code, reason: reason)
            return (machine.takeParkedSendersIfClosing(), machine.closedError)
        }
        for sender in senders { sender.resume(throwing: error) }
        return 0
    }

    /// Fails the connection over a close frame that breaks the protocol; returns -1 for lws.
    private func failOnBadClose(_ connection: ClientConnection, code: WebSocketCloseCode, reason: String) -> Int32 {
        connection.logger.debug("\(reason); dropping the connection")
        let error = WebSocketError.closed(code: code, reason: reason)
        failing = true
        let senders = connection.machine.withLock { machine in
            // No close frame goes out (lws drops the socket): closeCode stays 1006.
            machine.failed(with: error, closeCode: nil)
            return machine.takeParkedSendersIfClosing()
        }
        for sender in senders { sender.resume(throwing: error) }
        return -1
    }
}

extension Duration {
    /// Whole microseconds, at least 1 (lws timers take microseconds).
    var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(1, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
    }
}
