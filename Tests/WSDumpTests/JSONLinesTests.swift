import Foundation
import Testing
import WebSocketStreams
@testable import wsdump

@Suite("JSON lines")
struct JSONLinesTests {
    @Test func textAndBinaryMessages() {
        #expect(JSONLineRecord.message(.text("hi"), direction: .incoming, time: 1.5).encoded()
            == #"{"data":"hi","direction":"in","time":1.5,"type":"text"}"#)
        #expect(JSONLineRecord.message(.binary(Data([1, 2, 3])), direction: .outgoing, time: 2).encoded()
            == #"{"base64":"AQID","direction":"out","time":2,"type":"binary"}"#)
    }

    @Test func closeErrorAndOpenEvents() {
        #expect(JSONLineRecord.close(direction: .event, code: .normalClosure, reason: "bye", time: 3).encoded()
            == #"{"code":1000,"direction":"event","reason":"bye","time":3,"type":"close"}"#)
        #expect(JSONLineRecord.failure("connection failed: refused", time: 4).encoded()
            == #"{"direction":"event","error":"connection failed: refused","time":4,"type":"error"}"#)
        var open = JSONLineRecord(time: 5, direction: .event, type: .open)
        open.url = "ws://h/x"
        #expect(open.encoded() == #"{"direction":"event","time":5,"type":"open","url":"ws://h/x"}"#)
    }

    @Test func controlFrames() {
        #expect(JSONLineRecord.controlFrame(.pingSent(keepalive: false), time: 1)?.encoded()
            == #"{"direction":"out","time":1,"type":"ping"}"#)
        #expect(JSONLineRecord.controlFrame(.pongReceived(roundTrip: .milliseconds(250)), time: 1)?.encoded()
            == #"{"direction":"in","rtt":0.25,"time":1,"type":"pong"}"#)
        #expect(JSONLineRecord.controlFrame(.closeReceived(code: 4001, reason: "no"), time: 1)?.encoded()
            == #"{"code":4001,"direction":"in","reason":"no","time":1,"type":"close"}"#)
        #expect(JSONLineRecord.controlFrame(.handshakeRequestSent(head: "GET / HTTP/1.1\r\n\r\n"), time: 1) == nil)
    }

    @Test func escapeCodesAreEscaped() {
        let line = JSONLineRecord.message(.text("\u{1B}[31mred\n"), direction: .incoming, time: 1).encoded()
        #expect(!line.utf8.contains(0x1B))
        #expect(!line.contains("\n"))
        let parsed = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(parsed?["data"] as? String == "\u{1B}[31mred\n")
    }
}
