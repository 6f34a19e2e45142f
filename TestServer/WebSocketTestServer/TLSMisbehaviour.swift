/// How a `/tls/<kind>` route breaks TLS itself, after a valid `101 Switching Protocols`.
///
/// Served only by the raw TLS listener of a TLS ``TestServer`` (``TestServer/rawTLSPort``),
/// which runs OpenSSL itself and so decides which encrypted bytes reach the socket. None
/// of them sends a WebSocket close frame: a client should end the connection with 1006 and
/// a typed error, never hang.
///
/// | Kind | After the 101 |
/// |---|---|
/// | `truncated-record` | the TLS record of a text message "hello" without its last 5 bytes, then a clean TCP shutdown (FIN) |
/// | `reset-mid-record` | a ping; once the client's pong is back (so the 101 was read), the first half of the TLS record of a text message "lost", then a TCP reset (RST) |
/// | `close-notify` | a text message "bye", then TLS close_notify and a TCP FIN |
enum TLSMisbehaviour: Sendable, Equatable {
    case truncatedRecord
    case resetMidRecord
    case closeNotify

    /// The misbehaviour named by the last path component, e.g. `close-notify`; nil for an
    /// unknown kind.
    init?(kind: String) {
        switch kind {
        case "truncated-record": self = .truncatedRecord
        case "reset-mid-record": self = .resetMidRecord
        case "close-notify": self = .closeNotify
        default: return nil
        }
    }
}
