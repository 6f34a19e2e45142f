import SynchronizationSupport
import FoundationEssentials
import Logging
import WebSocketCore

/// The answers the opening steps read: the SOCKS5 proxy's, the HTTP proxy's to CONNECT,
/// and the server's to the upgrade request (with the body of a refusal).
extension ClientTransport {
    /// Plaintext that arrived before the protocol runs, handled by step.
    func receivedDuringOpening(_ connection: ClientConnection, _ bytes: UnsafeRawBufferPointer, loop: LoopConnections) {
        switch opening.step {
        case .negotiatingSOCKS(var handshake):
            opening.step = .idle
            var input = Array(bytes)
            // An answer that came with an earlier one waits in the handshake: after each
            // request, look again before reading more.
            while true {
                let action: SOCKS5Handshake.Action
                do {
                    action = try handshake.receive(input)
                } catch {
                    failHandshake(connection, WebSocketError(error))
                    return
                }
                input = []
                opening.step = .negotiatingSOCKS(handshake)
                switch action {
                case .waitForMore:
                    return
                case .send(let request):
                    send(request, connection: connection, loop: loop)
                    if hasEnded || dropRequested { return }
                case .tunnelOpen(let leftover):
                    connection.logger.trace("the SOCKS5 proxy opened a tunnel to \(url.hostHeader)")
                    opening.clock?.proxyFinished()
                    startTLSOrUpgrade(connection, loop: loop)
                    if !leftover.isEmpty { leftover.withUnsafeBytes { received(connection, $0, loop: loop) } }
                    return
                }
            }
        case .tunnelling(var parser):
            opening.step = .idle
            do {
                guard let (head, consumed) = try parser.parse(bytes) else {
                    opening.step = .tunnelling(parser)
                    return
                }
                guard (200..<300).contains(head.status) else {
                    failHandshake(connection, .proxyRejected(status: head.status, headers: head.headerDictionary))
                    return
                }
                connection.logger.trace("the proxy opened a tunnel to \(url.hostHeader)")
                opening.clock?.proxyFinished()
                startTLSOrUpgrade(connection, loop: loop)
                let rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                if !rest.isEmpty { received(connection, rest, loop: loop) }
            } catch {
                failHandshake(connection, .connectionFailed("the proxy's answer to CONNECT is not HTTP: \(error)"))
            }
        case .upgrading(var parser):
            opening.step = .idle
            do {
                guard let (head, consumed) = try parser.parse(bytes) else {
                    opening.step = .upgrading(parser)
                    return
                }
                reportHandshakeResponse(head)
                let rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                upgradeAnswered(connection, head: head, rest: rest, loop: loop)
            } catch {
                if tls == nil, let first = bytes.first, first == 0x15 || first == 0x16 {
                    // A TLS alert or handshake record: the server expected a ClientHello.
                    failHandshake(connection, .connectionFailed(
                        "the server answered in TLS, not HTTP (\(url.hostHeader)): use wss:// for this server"))
                    return
                }
                failHandshake(connection, .connectionFailed("the server's answer to the upgrade request is not valid HTTP: \(error)"))
            }
        case .rejected(let head, var body):
            if body.append(bytes) {
                failHandshake(connection, rejection(head, body: body))
            } else {
                opening.step = .rejected(head, body)
            }
        case .idle, .connecting, .securing, .open, .ended:
            break
        }
    }

    /// The server answered the upgrade request.
    private func upgradeAnswered(
        _ connection: ClientConnection, head: HTTPResponseHead, rest: UnsafeRawBufferPointer, loop: LoopConnections
    ) {
        let offeredExtensions = configuration.compression.isEnabled ? ["permessage-deflate"] : []
        switch HandshakeValidator.validate(
            head, key: opening.key, sha1: Crypto.sha1, offeredSubprotocols: configuration.subprotocols, offeredExtensions: offeredExtensions
        ) {
        case .success(let negotiated):
            opened(connection, negotiated: negotiated, loop: loop)
            if isOpen, !rest.isEmpty { readFrames(connection, rest, loop: loop) }
        case .failure(.rejected):
            var body = HTTPBodyCollector(head: head)
            if body.append(rest) {
                failHandshake(connection, rejection(head, body: body))
            } else {
                opening.step = .rejected(head, body)
            }
        case .failure(.invalid(let reason)):
            failHandshake(connection, .connectionFailed("\(reason) (\(url.hostHeader))"))
        }
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

    // MARK: - The handshake as the wire-event observer sees it

    /// Reports the upgrade request about to be written, secrets redacted.
    func reportHandshakeRequest() {
        guard let observer = configuration.wireEventObserver else { return }
        let text = String(decoding: opening.requestBytes, as: UTF8.self)
        observer(.handshakeRequestSent(head: redactor?.redact(text) ?? text))
    }

    /// Reports the head of the server's answer to the upgrade request.
    func reportHandshakeResponse(_ head: HTTPResponseHead) {
        guard let observer = configuration.wireEventObserver else { return }
        observer(.handshakeResponseReceived(head: Self.responseText(
            head, redactor: redactor, redactsCookies: configuration.redactsSecretsInLogs)))
    }

    /// `head` as text: the status line and each field in the server's order and spelling,
    /// CRLF line ends and the closing empty line; `Set-Cookie` values are hidden when
    /// `redactsCookies`, and the request's secrets wherever `redactor` finds them.
    static func responseText(_ head: HTTPResponseHead, redactor: SecretRedactor?, redactsCookies: Bool) -> String {
        var text = "\(head.version) \(head.status)"
        if !head.reasonPhrase.isEmpty { text += " \(head.reasonPhrase)" }
        text += "\r\n"
        for field in head.headers {
            let isCookie = field.name.lowercased() == "set-cookie"
            text += "\(field.name): \(redactsCookies && isCookie ? SecretRedactor.replacement : field.value)\r\n"
        }
        text += "\r\n"
        return redactor?.redact(text) ?? text
    }
}
