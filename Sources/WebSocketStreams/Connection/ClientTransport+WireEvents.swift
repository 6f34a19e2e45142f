/// The opening handshake as ``WebSocketConfiguration/wireEventObserver`` sees it: the
/// request as written and the response head as parsed, with secrets redacted.
extension ClientTransport {
    /// Reports the upgrade request about to be written (service thread).
    func reportHandshakeRequest() {
        guard let observer = configuration.wireEventObserver else { return }
        let text = String(decoding: upgradeRequestBytes, as: UTF8.self)
        observer(.handshakeRequestSent(head: redactor?.redact(text) ?? text))
    }

    /// Reports the head of the server's answer to the upgrade request (service thread).
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
