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

    /// Settles what this client does under the server's answer (RFC 7692 section 7.1). The
    /// answer was already checked for parameters RFC 7692 does not define, repeated ones and
    /// values outside 8...15 (``DeflateParameters/init(negotiating:)``); beyond that, this
    /// side is lenient where leniency costs nothing:
    /// - this client compresses with the smaller of the window it offered and the one the
    ///   server answered: a window larger than offered (the Autobahn fuzzing server answers
    ///   `client_max_window_bits=15` to an offer of 9) cannot make the server's decoding fail
    ///   when this side keeps to the smaller one;
    /// - `server_max_window_bits` and `server_no_context_takeover` are taken as answered,
    ///   asked for or not, larger or not: this client decodes with the window answered (15
    ///   bits when none was; libwebsockets answers none whatever was asked) and follows the
    ///   server's context takeover;
    /// - `client_no_context_takeover` offered holds whether or not the server repeats it.
    package func settle(_ answer: DeflateParameters) -> DeflateParameters {
        var settled = answer
        if let offered = clientMaxWindowBits {
            // Unanswered, the window is 15, so the smaller is always the one offered.
            settled.clientMaxWindowBits = min(offered, answer.clientMaxWindowBits)
        }
        if clientNoContextTakeover { settled.clientNoContextTakeover = true }
        return settled
    }
}
