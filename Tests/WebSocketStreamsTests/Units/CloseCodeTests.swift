import Foundation
import Testing
import WebSocketStreams

@Suite("WebSocketCloseCode")
struct CloseCodeTests {
    @Test("which codes may be sent")
    func sendable() {
        #expect(WebSocketCloseCode.normalClosure.isValidInCloseFrame)
        #expect(WebSocketCloseCode.badGateway.rawValue == 1014 && WebSocketCloseCode.badGateway.isValidInCloseFrame)
        #expect(WebSocketCloseCode(rawValue: 4999).isValidInCloseFrame)
        #expect(!WebSocketCloseCode.noStatusReceived.isValidInCloseFrame)
        #expect(!WebSocketCloseCode.abnormalClosure.isValidInCloseFrame)
        #expect(!WebSocketCloseCode(rawValue: 999).isValidInCloseFrame)
        #expect(!WebSocketCloseCode(rawValue: 2000).isValidInCloseFrame)
    }

    @Test("descriptions name well-known codes")
    func descriptions() {
        #expect(WebSocketCloseCode.messageTooBig.description == "1009 (message too big)")
        #expect(WebSocketCloseCode(integerLiteral: 4000).description == "4000 (private use)")
        #expect(WebSocketCloseCode(rawValue: 1234).description == "1234")
    }

    @Test("errors read as sentences")
    func errorDescriptions() {
        #expect(WebSocketError.handshakeRejected(status: 401, headers: ["WWW-Authenticate": "Bearer"], body: Data()).description
                == "handshake rejected: HTTP 401 (WWW-Authenticate: Bearer)")
        #expect(WebSocketError.closed(code: .goingAway, reason: "bye").description == "connection closed: 1001 (going away) \"bye\"")
    }
}
