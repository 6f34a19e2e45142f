import Testing
@testable import WebSocketStreams

/// How values read when printed: a connection's end, a chain's pins, errors that say what to do.
@Suite("Readable descriptions")
struct DescriptionTests {
    @Test("WebSocketEnding reads as who closed, the code, the reason, the error and what was not sent")
    func endingDescription() {
        let peer = WebSocketEnding(
            initiator: .peer, closeCode: .normalClosure, closeReason: "bye", error: nil, unsentMessages: [])
        #expect(peer.description == #"closed by the peer: 1000 (normal closure) "bye""#)
        let lost = WebSocketEnding(
            initiator: .connectionLost, closeCode: .abnormalClosure, closeReason: "",
            error: .connectionFailed("connection reset by peer"), unsentMessages: [.text("a")])
        #expect(lost.description
            == "connection lost: 1006 (abnormal closure); connection failed: connection reset by peer; 1 message not sent")
        let local = WebSocketEnding(
            initiator: .local, closeCode: .messageTooBig, closeReason: "", error: .messageTooLarge(limit: 10),
            unsentMessages: [.text("a"), .text("b")])
        #expect(local.description.hasPrefix("closed by this side: 1009 (message too big); message larger than the 10-byte limit"))
        #expect(local.description.hasSuffix("; 2 messages not sent"))
    }

    @Test("a chain's pins are labelled leaf, intermediate CA and CA")
    func pinLabels() {
        #expect(TLSSession.describePins([]) == "none")
        #expect(TLSSession.describePins(["sha256/L"]) == "leaf sha256/L")
        #expect(TLSSession.describePins(["sha256/L", "sha256/C"]) == "leaf sha256/L, CA sha256/C")
        #expect(TLSSession.describePins(["sha256/L", "sha256/I", "sha256/C"])
            == "leaf sha256/L, intermediate CA sha256/I, CA sha256/C")
    }

    @Test("invalidUse says what to do instead")
    func invalidUseWords() {
        #expect(WebSocketError.messagesOfStreamingConnection.description.contains("read them through messageStreams"))
        #expect(WebSocketError.secondReader.description.hasPrefix("invalid use: two readers at once"))
    }
}
