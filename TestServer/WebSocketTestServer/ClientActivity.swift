import WebSocketStreams

/// What a client sent on a raw route, as one change to its connection's record.
struct ClientActivity {
    /// Data messages completed (final frames).
    var messages = 0
    /// Payload bytes of data frames.
    var bytes = 0
    /// Pongs.
    var pongs = 0
    /// The client's close frame: its code (`noStatusReceived` when it had none) and reason.
    var close: (code: WebSocketCloseCode?, reason: String)?

    var isEmpty: Bool { messages == 0 && bytes == 0 && pongs == 0 && close == nil }
}

extension ServerRecorder {
    /// Adds what the client sent to the record of connection `id`.
    func record(_ activity: ClientActivity, connection id: Int) {
        guard !activity.isEmpty else { return }
        change(id) { record in
            record.messagesReceived += activity.messages
            record.bytesReceived += activity.bytes
            record.pongsReceived += activity.pongs
            if let close = activity.close {
                record.closeCodeReceived = close.code
                record.closeReasonReceived = close.reason
                record.closeReceivedAt = .now
            }
        }
    }
}
