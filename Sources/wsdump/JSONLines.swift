import Foundation
import WebSocketStreams

/// One `--jsonl` event: a JSON object on a line of its own, keys sorted, for piping into
/// other tools (`jq`, log collectors).
///
/// ```
/// {"direction":"event","time":1712345678.123,"type":"open","url":"ws://127.0.0.1:9001/echo"}
/// {"data":"hello","direction":"in","time":1712345678.125,"type":"text"}
/// {"base64":"AQID","direction":"in","time":1712345678.126,"type":"binary"}
/// {"code":1000,"direction":"event","reason":"","time":1712345678.2,"type":"close"}
/// ```
///
/// `direction` is `in` (from the peer), `out` (sent) or `event` (the session's own events:
/// open, close, error, state). Only the keys that apply are present.
struct JSONLineRecord: Sendable, Equatable {
    /// Where the event came from.
    enum Direction: String, Sendable {
        case incoming = "in"
        case outgoing = "out"
        case event
    }

    /// What happened.
    enum Kind: String, Sendable {
        case open, text, binary, ping, pong, close, error, state
    }

    /// Unix time in seconds.
    var time: Double
    var direction: Direction
    var type: Kind
    /// A text message, or a state's description.
    var data: String?
    /// A binary message, base64-encoded.
    var base64: String?
    var code: Int?
    var reason: String?
    var error: String?
    /// The URL, for `open`.
    var url: String?
    /// Round-trip seconds, for `pong`.
    var roundTrip: Double?

    init(time: Double, direction: Direction, type: Kind) {
        self.time = time
        self.direction = direction
        self.type = type
    }

    /// A data message.
    static func message(_ message: WebSocketMessage, direction: Direction, time: Double) -> JSONLineRecord {
        switch message {
        case .text(let text):
            var record = JSONLineRecord(time: time, direction: direction, type: .text)
            record.data = text
            return record
        case .binary(let data):
            var record = JSONLineRecord(time: time, direction: direction, type: .binary)
            record.base64 = data.base64EncodedString()
            return record
        }
    }

    /// A control frame seen by the connection; `nil` for other wire events (the handshake).
    static func controlFrame(_ event: WebSocketWireEvent, time: Double) -> JSONLineRecord? {
        switch event.kind {
        case .pingSent:
            return JSONLineRecord(time: time, direction: .outgoing, type: .ping)
        case .pongReceived:
            var record = JSONLineRecord(time: time, direction: .incoming, type: .pong)
            record.roundTrip = (event.roundTrip ?? .zero).inSeconds
            return record
        case .closeReceived:
            return close(direction: .incoming, code: event.closeCode ?? .noStatusReceived, reason: event.closeReason ?? "", time: time)
        case .closeSent:
            return close(direction: .outgoing, code: event.closeCode ?? .noStatusReceived, reason: event.closeReason ?? "", time: time)
        default:
            return nil
        }
    }

    /// A close frame (`in`/`out`), or how the session ended (`event`).
    static func close(direction: Direction, code: WebSocketCloseCode, reason: String, time: Double) -> JSONLineRecord {
        var record = JSONLineRecord(time: time, direction: direction, type: .close)
        record.code = Int(code.rawValue)
        record.reason = reason
        return record
    }

    /// An error that ended or prevented the connection.
    static func failure(_ description: String, time: Double) -> JSONLineRecord {
        var record = JSONLineRecord(time: time, direction: .event, type: .error)
        record.error = description
        return record
    }

    /// The record as one line of JSON (no trailing newline). Control characters in strings
    /// are escaped, so a line never holds a raw escape code.
    func encoded() -> String {
        var object: [String: Any] = ["time": time, "direction": direction.rawValue, "type": type.rawValue]
        if let data { object["data"] = data }
        if let base64 { object["base64"] = base64 }
        if let code { object["code"] = code }
        if let reason { object["reason"] = reason }
        if let error { object["error"] = error }
        if let url { object["url"] = url }
        if let roundTrip { object["rtt"] = roundTrip }
        guard let json = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return #"{"type":"error","error":"could not encode an event"}"#
        }
        return String(decoding: json, as: UTF8.self)
    }
}
