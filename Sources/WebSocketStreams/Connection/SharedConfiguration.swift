/// One connection's configuration, held once and referred to by both halves of the
/// connection (``ClientConnection`` and its ``ClientTransport``): the configuration is
/// about 300 bytes, and an idle connection should not carry it twice.
final class SharedConfiguration: Sendable {
    let value: WebSocketConfiguration

    init(_ value: WebSocketConfiguration) {
        self.value = value
    }
}
