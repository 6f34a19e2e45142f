import FoundationEssentials
import WebSocketStreams

extension TestServer {
    /// A conversation as `wsdump --record FILE` writes it: every message both ways and how it
    /// ended, with the time of each since the connection opened. A server's side of it can be
    /// played back to a client (``Handler/replaying(_:matching:timing:)``, `TestServer --replay FILE`).
    ///
    /// The file is JSON lines (schema version 1). The first line says what it is; each line
    /// after it is one event, `t` being milliseconds since the connection opened and
    /// `direction` seen from the client that recorded it (`out`: it sent; `in`: it received):
    ///
    /// ```
    /// {"type":"recording","version":1,"url":"ws://127.0.0.1:9001/feed","subprotocol":null}
    /// {"t":1.2,"direction":"out","type":"text","data":"subscribe"}
    /// {"t":3.4,"direction":"in","type":"text","data":"snapshot"}
    /// {"t":5.0,"direction":"in","type":"binary","base64":"AQID"}
    /// {"t":900.1,"direction":"in","type":"close","code":1000,"reason":"bye"}
    /// ```
    ///
    /// The ending is a `close` line (`in`: the server closed first; `out`: the client did) or
    /// a `drop` line (`{"t":…,"direction":"event","type":"drop"}`: TCP ended without a close
    /// frame); a recording may also have none. Other keys are ignored, so later versions can
    /// add some; a line of another `type`, or another `version`, is refused.
    public struct Recording: Sendable, Hashable {
        /// The URL the conversation was recorded from, if the file says.
        public var url: String?
        /// The subprotocol that was negotiated, if any.
        public var subprotocol: String?
        /// What happened, in order.
        public var events: [RecordedEvent]

        /// The schema version this reads and `wsdump --record` writes.
        public static let version = 1

        /// A recording of `events`.
        public init(url: String? = nil, subprotocol: String? = nil, events: [RecordedEvent]) {
            self.url = url
            self.subprotocol = subprotocol
            self.events = events
        }

        /// Reads a recording from its JSON lines.
        ///
        /// - Throws: ``TestServerError/invalidRecording(_:)`` naming the line that is not
        ///   JSON, has an unknown `type` or `version`, or a `base64` that is not base64.
        public init(jsonLines: String) throws(TestServerError) {
            var lines = jsonLines.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                .map { (number: $0.offset + 1, text: $0.element.trimmingCharacters(in: " \t\r")) }
                .filter { !$0.text.isEmpty }[...]
            guard let header = lines.popFirst() else { throw .invalidRecording("the recording is empty") }
            let head = try RecordingLine.decode(header.text, line: header.number)
            guard head.type == "recording" else {
                throw .invalidRecording("line \(header.number): the first line must be {\"type\":\"recording\",\"version\":1,...}, not type \(head.type ?? "none")")
            }
            guard head.version == Self.version else {
                throw .invalidRecording("line \(header.number): schema version \(head.version.map(String.init) ?? "missing") is not supported (this reads version \(Self.version))")
            }
            url = head.url
            subprotocol = head.subprotocol
            events = try lines.map { line throws(TestServerError) in try RecordingLine.decode(line.text, line: line.number).event(line: line.number) }
        }

        /// Reads a recording from the file at `path`.
        ///
        /// - Throws: ``TestServerError/invalidRecording(_:)`` if it cannot be read or parsed.
        public init(contentsOfFile path: String) throws(TestServerError) {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw .invalidRecording("cannot read \(path): \(error)")
            }
            do {
                try self.init(jsonLines: String(decoding: data, as: UTF8.self))
            } catch {
                throw .invalidRecording("\(path): \(error.description.dropFirst("recording: ".count))")
            }
        }
    }
}
