import SynchronizationSupport
import Logging
import WebSocketCore

/// The answers the opening steps read: the SOCKS5 proxy's, the HTTP proxy's to CONNECT,
/// and the server's to the upgrade request (read by ``UpgradeAnswer``, as ``ClientEngine`` reads it).
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
        case .upgrading(var answer):
            opening.step = .idle
            let hadHead = answer.head != nil
            let outcome = answer.read(bytes)
            opening.step = .upgrading(answer)
            if !hadHead, let head = answer.head { reportHandshakeResponse(head) }
            switch outcome {
            case .needsMore:
                break
            case .upgraded(let negotiated, let framesStart):
                opened(connection, negotiated: negotiated, loop: loop)
                let frames = UnsafeRawBufferPointer(rebasing: bytes[framesStart...])
                if isOpen, !frames.isEmpty { readFrames(connection, frames, loop: loop) }
            case .failed(let error):
                failHandshake(connection, error)
            }
        case .idle, .connecting, .securing, .open, .ended:
            break
        }
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
