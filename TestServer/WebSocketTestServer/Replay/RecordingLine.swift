import FoundationEssentials
import WebSocketStreams

/// One JSON line of a recording as it is on disk (see ``TestServer/Recording``).
struct RecordingLine: Decodable {
    var type: String?
    var version: Int?
    var url: String?
    var subprotocol: String?
    var t: Double?
    var direction: String?
    var data: String?
    var base64: String?
    var code: Int?
    var reason: String?

    static func decode(_ text: String, line: Int) throws(TestServerError) -> RecordingLine {
        do {
            return try JSONDecoder().decode(RecordingLine.self, from: Data(text.utf8))
        } catch {
            throw .invalidRecording("line \(line) is not a JSON object of a recording: \(text.prefix(80))")
        }
    }

    /// The event this line records.
    func event(line: Int) throws(TestServerError) -> TestServer.RecordedEvent {
        guard let t, t >= 0 else { throw .invalidRecording("line \(line): no \"t\" (milliseconds since open)") }
        let time = Duration.microseconds(Int64((t * 1000).rounded()))
        let side: TestServer.RecordedEvent.Side? = switch direction {
        case "out": .client
        case "in": .server
        default: nil
        }
        switch type {
        case "text", "binary":
            guard let side else { throw .invalidRecording("line \(line): a message needs \"direction\": \"in\" or \"out\"") }
            if type == "text" {
                guard let data else { throw .invalidRecording("line \(line): a text message needs \"data\"") }
                return .init(time: time, kind: .message(.text(data), from: side))
            }
            guard let base64, let bytes = Data(base64Encoded: base64) else {
                throw .invalidRecording("line \(line): \"base64\" is missing or not valid base64")
            }
            return .init(time: time, kind: .message(.binary(bytes), from: side))
        case "close":
            guard let side else { throw .invalidRecording("line \(line): a close needs \"direction\": \"in\" or \"out\"") }
            guard let code, (1000...4999).contains(code) else { throw .invalidRecording("line \(line): a close needs a \"code\" of 1000-4999") }
            let closeCode = WebSocketCloseCode(rawValue: UInt16(code))
            // 1006 names a connection lost without a close frame: replayed as the drop it was.
            if closeCode == .abnormalClosure { return .init(time: time, kind: .drop) }
            guard closeCode.isValidInCloseFrame || side == .client else {
                throw .invalidRecording("line \(line): close code \(code) never goes in a close frame, so the server cannot replay it")
            }
            return .init(time: time, kind: .close(code: closeCode, reason: reason ?? "", from: side))
        case "drop":
            return .init(time: time, kind: .drop)
        default:
            throw .invalidRecording("line \(line): unknown type \(type.map { "\"\($0)\"" } ?? "(none)")")
        }
    }
}
