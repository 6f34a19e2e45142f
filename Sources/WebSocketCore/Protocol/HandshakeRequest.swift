import FoundationEssentials

/// The client's opening handshake (RFC 6455 section 4.1): an HTTP/1.1 `GET` asking the
/// server to switch to the WebSocket protocol, as bytes ready to write.
///
/// The request is built from already-validated input (WebSocketStreams' `ConfigurationValidator` rejects
/// header names that are not tokens, reserved names and values with line breaks), so
/// nothing here re-checks it. Basic authorization from the URL's user info is the caller's
/// business too: it passes `Authorization` in `headers`.
///
/// ```swift
/// let request = HandshakeRequest(url: url, headers: [], subprotocols: ["chat"], origin: nil, extensionOffer: nil)
/// write(request.bytes)
/// // later: HandshakeValidator.validate(head, key: request.key, ...)
/// ```
package struct HandshakeRequest: Sendable {
    /// The magic GUID RFC 6455 appends to the key before hashing it into `Sec-WebSocket-Accept`.
    package static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The `Sec-WebSocket-Key` sent: the base64 encoding of 16 random bytes.
    package let key: String
    /// The whole request: request line, header fields (CRLF line ends) and the blank line.
    package let bytes: [UInt8]

    /// Builds the request for `url`.
    ///
    /// Fields appear in this order: `Host` (with the port only when it is not the scheme's
    /// default, IPv6 literals in brackets), `Upgrade`, `Connection`, `Sec-WebSocket-Key`,
    /// `Sec-WebSocket-Version: 13`, `Sec-WebSocket-Protocol` (when `subprotocols` is not
    /// empty, comma-separated in order of preference), `Origin` (when given),
    /// `Sec-WebSocket-Extensions` (when given), then `headers` in the order given.
    ///
    /// - Parameter keyBytes: the 16 nonce bytes behind the key: random (the caller draws
    ///   them, see `Crypto.randomBytes`), unless a test fixes them.
    package init(
        url: WebSocketURL,
        headers: [(name: String, value: String)],
        subprotocols: [String],
        origin: String?,
        extensionOffer: String?,
        keyBytes: [UInt8]
    ) {
        precondition(keyBytes.count == 16, "the Sec-WebSocket-Key nonce must be 16 bytes (RFC 6455 section 4.1)")
        key = Data(keyBytes).base64EncodedString()

        var text = "GET \(url.pathAndQuery) HTTP/1.1\r\n"
        text += "Host: \(url.hostHeader)\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty {
            text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n"
        }
        if let origin {
            text += "Origin: \(origin)\r\n"
        }
        if let extensionOffer {
            text += "Sec-WebSocket-Extensions: \(extensionOffer)\r\n"
        }
        for header in headers {
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "\r\n"
        bytes = Array(text.utf8)
    }

    /// The `Sec-WebSocket-Accept` value a server must answer `key` with:
    /// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")).
    /// `sha1` is the digest (`Crypto.sha1`, from the C layer).
    package static func acceptValue(forKey key: String, sha1: ([UInt8]) -> [UInt8]) -> String {
        Data(sha1(Array((key + acceptGUID).utf8))).base64EncodedString()
    }
}
