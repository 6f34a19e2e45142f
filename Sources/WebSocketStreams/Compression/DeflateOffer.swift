/// What this client asks for in its permessage-deflate offer (RFC 7692 section 7.1), and the
/// rules the server's answer must keep.
package struct DeflateOffer: Sendable, Hashable {
    /// `client_max_window_bits` with this value; `nil` sends it without one.
    package var clientMaxWindowBits: Int?
    /// `server_max_window_bits` with this value; `nil` leaves it out.
    package var serverMaxWindowBits: Int?
    package var clientNoContextTakeover = false
    package var serverNoContextTakeover = false

    /// The default offer: `permessage-deflate; client_max_window_bits`.
    package init() {}

    /// The offer `compression` makes.
    package init(_ compression: WebSocketCompression) {
        clientMaxWindowBits = compression.clientMaxWindowBits
        serverMaxWindowBits = compression.serverMaxWindowBits
        clientNoContextTakeover = compression.clientNoContextTakeover
        serverNoContextTakeover = compression.serverNoContextTakeover
    }

    /// The `Sec-WebSocket-Extensions` value.
    package var headerValue: String {
        var value = DeflateParameters.extensionName
        if let bits = clientMaxWindowBits {
            value += "; client_max_window_bits=\(bits)"
        } else {
            value += "; client_max_window_bits"
        }
        if let bits = serverMaxWindowBits { value += "; server_max_window_bits=\(bits)" }
        if clientNoContextTakeover { value += "; client_no_context_takeover" }
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        return value
    }

    /// Checks the parameters a server answered with against this offer, and settles what
    /// this client does (RFC 7692 section 7.1):
    /// - `client_max_window_bits` may narrow the client's window, never widen it past the
    ///   value offered;
    /// - `server_max_window_bits` may come unasked, and when asked for, never with a larger value;
    /// - `client_no_context_takeover` offered holds whether or not the server repeats it.
    ///
    /// A server that leaves out `server_max_window_bits` or `server_no_context_takeover` asked
    /// for (libwebsockets ignores the first) is accepted: RFC 7692 says it should have
    /// repeated them, but what they save is the server's own memory, and this client decodes
    /// any window. The server's messages are then decoded with its window kept.
    func settle(_ answer: DeflateParameters) throws(DeflateParameters.Failure) -> DeflateParameters {
        var settled = answer
        if let offered = clientMaxWindowBits {
            if answer.answeredClientWindowBits, answer.clientMaxWindowBits > offered {
                throw .exceedsOffer(parameter: "client_max_window_bits", offered: offered, answered: answer.clientMaxWindowBits)
            }
            if !answer.answeredClientWindowBits { settled.clientMaxWindowBits = offered }
        }
        if let offered = serverMaxWindowBits, answer.answeredServerWindowBits, answer.serverMaxWindowBits > offered {
            throw .exceedsOffer(parameter: "server_max_window_bits", offered: offered, answered: answer.serverMaxWindowBits)
        }
        if clientNoContextTakeover { settled.clientNoContextTakeover = true }
        return settled
    }
}
