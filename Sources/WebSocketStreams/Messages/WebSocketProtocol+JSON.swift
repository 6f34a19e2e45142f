import FoundationEssentials

extension WebSocketProtocol {
    /// Sends `value` encoded as JSON, in one text message.
    ///
    /// ```swift
    /// struct Subscribe: Encodable { let op = "subscribe"; let channel: String }
    /// try await connection.send(json: Subscribe(channel: "trades"))
    /// ```
    ///
    /// - Parameters:
    ///   - value: What to send.
    ///   - encoder: The encoder to use (its key and date strategies apply); a plain
    ///     `JSONEncoder` by default.
    /// - Throws: The encoder's `EncodingError` (nothing is sent), or what ``send(_:)`` throws.
    public func send(json value: some Encodable, encoder: JSONEncoder = JSONEncoder()) async throws {
        let data = try encoder.encode(value)
        try await send(.text(String(decoding: data, as: UTF8.self)))
    }

    /// The messages the peer sends, each decoded from JSON as `type`: text and binary
    /// messages alike, by their bytes.
    ///
    /// A message that does not decode ends the sequence: it throws
    /// ``WebSocketError/Code/undecodableMessage`` (whose reason gives the decoder's words and
    /// the start of the message) and the socket is closed with 1007. Nothing is skipped
    /// silently; to tolerate messages of other shapes, decode an enum or optional fields, or
    /// iterate ``messages`` and decode yourself.
    ///
    /// Otherwise it behaves as ``messages``: flow control, the end of the socket (the sequence
    /// then finishes without error), and ending the iteration closes the socket (1001).
    ///
    /// ```swift
    /// struct Trade: Decodable { let price: Double; let size: Double }
    /// for try await trade in connection.messages(decoding: Trade.self) {
    ///     print(trade.price)
    /// }
    /// ```
    public func messages<Value: Decodable>(
        decoding type: Value.Type, decoder: JSONDecoder = JSONDecoder()
    ) -> WebSocketDecodedMessages<Value> {
        WebSocketDecodedMessages(socket: self, decoder: decoder)
    }
}
