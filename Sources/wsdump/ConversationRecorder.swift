import Foundation
import Glibc
import WebSocketStreams

/// `--record FILE`: writes the conversation as the test server's `--replay` reads it
/// (`TestServer.Recording`, schema version 1): a first line saying what the file is, then
/// one JSON line per message both ways and one for the ending, each with `t`, milliseconds
/// since the connection opened. Every line is flushed as it is written, so a wsdump that is
/// killed leaves a file that replays up to that point.
///
/// ```
/// {"subprotocol":null,"type":"recording","url":"ws://127.0.0.1:9001/feed","version":1}
/// {"data":"subscribe","direction":"out","t":1.204,"type":"text"}
/// {"base64":"AQID","direction":"in","t":3.51,"type":"binary"}
/// {"code":1000,"direction":"in","reason":"bye","t":900.1,"type":"close"}
/// ```
final class ConversationRecorder {
    static let version = 1

    private let file: UnsafeMutablePointer<FILE>
    private var openedAt: ContinuousClock.Instant?
    private var ended = false

    /// Creates (or truncates) the file at `path`; `nil` when it cannot be written.
    init?(path: String) {
        guard let file = fopen(path, "w") else { return nil }
        self.file = file
    }

    deinit { fclose(file) }

    /// The connection opened: the header line, and the clock starts.
    func opened(url: String, subprotocol: String?) {
        guard openedAt == nil else { return }
        openedAt = .now
        write(["type": "recording", "version": Self.version, "url": url, "subprotocol": subprotocol ?? NSNull()])
    }

    /// A message went out (`out`) or came in (`in`).
    func message(_ message: WebSocketMessage, outgoing: Bool) {
        guard openedAt != nil, !ended else { return }
        var line: [String: Any] = ["t": elapsed, "direction": outgoing ? "out" : "in"]
        switch message {
        case .text(let text):
            line["type"] = "text"
            line["data"] = text
        case .binary(let data):
            line["type"] = "binary"
            line["base64"] = data.base64EncodedString()
        }
        write(line)
    }

    /// The connection ended as `ending` says: a close by the side that started it, or a drop.
    func ended(_ ending: WebSocketEnding?) {
        guard openedAt != nil, !ended, let ending else { return }
        ended = true
        if ending.closeCode == .abnormalClosure || !ending.closeCode.isValidInCloseFrame {
            write(["t": elapsed, "direction": "event", "type": "drop"])
            return
        }
        write([
            "t": elapsed, "direction": ending.initiator == .peer ? "in" : "out", "type": "close",
            "code": Int(ending.closeCode.rawValue), "reason": ending.closeReason,
        ])
    }

    /// Milliseconds since the connection opened, to the microsecond.
    private var elapsed: Double {
        guard let openedAt else { return 0 }
        let components = (ContinuousClock.now - openedAt).components
        return ((Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15) * 1000).rounded() / 1000
    }

    private func write(_ object: [String: Any]) {
        guard let json = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        var line = Array(json)
        line.append(0x0A)
        _ = line.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fflush(file)
    }
}
