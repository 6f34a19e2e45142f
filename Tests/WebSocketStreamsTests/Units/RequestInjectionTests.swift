import Foundation
import SynchronizationSupport
import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

/// One place CR, LF or NUL could be smuggled into the upgrade request, and the words the
/// error must name it with.
struct InjectionCase: Sendable, CustomTestStringConvertible {
    let field: String
    var url = "ws://127.0.0.1:1/feed"
    var configure: @Sendable (inout WebSocketConfiguration) -> Void = { _ in }
    let named: String

    var testDescription: String { field }
}

private let injectionCases: [InjectionCase] = [
    InjectionCase(field: "header value (CR LF)", configure: { $0.headers["X-Test"] = "a\r\nX-Evil: 1" }, named: "header 'X-Test'"),
    InjectionCase(field: "header value (NUL)", configure: { $0.headers["X-Test"] = "a\0b" }, named: "header 'X-Test'"),
    InjectionCase(field: "header value (bare LF)", configure: { $0.headers["Authorization"] = "Bearer a\nb" }, named: "header 'Authorization'"),
    InjectionCase(field: "header name", configure: { $0.headers["X-A\r\nX-Evil"] = "1" }, named: "header name \"X-A\\r\\nX-Evil\""),
    InjectionCase(field: "subprotocol", configure: { $0.subprotocols = ["chat\r\nX-Evil: 1"] }, named: "subprotocol \"chat\\r\\nX-Evil: 1\""),
    InjectionCase(field: "origin", configure: { $0.origin = "https://a.example\r\nX-Evil: 1" }, named: "the origin"),
    InjectionCase(field: "URL host (raw)", url: "ws://a.example\r\nX-Evil:1/", named: "the URL's host"),
    InjectionCase(field: "URL host (percent-decoded)", url: "ws://a.example%0d%0aX-Evil/", named: "the URL's host"),
    InjectionCase(field: "URL path", url: "ws://127.0.0.1:1/feed\r\nX-Evil: 1", named: "the URL's path"),
    InjectionCase(field: "URL query", url: "ws://127.0.0.1:1/feed?a=1\n", named: "the URL's query"),
    InjectionCase(field: "URL query (NUL)", url: "ws://127.0.0.1:1/feed?a=\0", named: "the URL's query"),
    InjectionCase(field: "URL user info", url: "ws://u\r\n:p@127.0.0.1:1/", named: "the URL's user info"),
]

@Suite("Header and URL injection refused before any byte is sent")
struct RequestInjectionTests {
    /// Port 1 on loopback refuses connections: an error other than `invalidConfiguration`
    /// would mean a socket was opened.
    @Test("CR, LF or NUL is invalidConfiguration naming the field", arguments: injectionCases)
    func refused(_ injection: InjectionCase) async throws {
        var configuration = WebSocketConfiguration()
        injection.configure(&configuration)
        let error = await expectWebSocketError {
            _ = try await WebSocket.connect(to: injection.url, configuration: configuration)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason?.contains(injection.named) == true, "\(error?.reason ?? "no reason")")
        #expect(error?.reason?.contains("CR, LF or NUL") == true)
    }

    @Test("a header prepare sets with a line break ends the reconnecting socket the same way, nothing sent")
    func fromPrepare() async throws {
        try await withTestServer { server in
            let socket = ReconnectingWebSocket(
                to: server.url(path: "/echo"), prepare: { $0.headers["Authorization"] = "Bearer x\r\nX-Evil: 1" })
            let error = await expectWebSocketError { try await socket.send(.text("x")) }
            #expect(error?.code == .invalidConfiguration)
            #expect(server.snapshot.handshakeCount == 0)
            #expect(server.snapshot.rejectedHandshakes.isEmpty)
        }
    }

    @Test("percent-encoded CR LF in the path and query go out encoded, byte for byte")
    func percentEncodedStaysEncoded() throws {
        #expect(RequestInjectionGuard.injectedPart(of: "ws://h/a%0D%0Ab?q=%0d%0a%00") == nil)
        let url = try WebSocketURL(parsing: "ws://h/a%0D%0Ab?q=%0d%0a%00")
        let request = HandshakeRequest(
            url: url, headers: [(name: "X-Test", value: "tab\there, colon: fine")], subprotocols: ["chat"],
            origin: "https://a.example", extensionOffer: nil, keyBytes: [UInt8](repeating: 0, count: 16))
        let expected = "GET /a%0D%0Ab?q=%0d%0a%00 HTTP/1.1\r\n"
            + "Host: h\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"
            + "Sec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: chat\r\n"
            + "Origin: https://a.example\r\n"
            + "X-Test: tab\there, colon: fine\r\n"
            + "\r\n"
        #expect(request.bytes == Array(expected.utf8))
        // One CRLF per line: nothing in the fields added a line.
        #expect(request.bytes.count(where: { $0 == 0x0A }) == 10)
        #expect(request.bytes.count(where: { $0 == 0x0D }) == 10)
    }

    @Test("the upgrade request's bytes, as the transport builds them: Proxy-Authorization left out")
    func openingHandshakeBytes() throws {
        var configuration = WebSocketConfiguration()
        configuration.headers = ["Proxy-Authorization": "Basic cDpx", "Authorization": "Bearer t", "Cookie": "a=1"]
        configuration.compression = .disabled
        let url = try WebSocketURL(parsing: "ws://127.0.0.1:9001/feed?x=1")
        let opening = OpeningHandshake(url: url, configuration: configuration, clock: ConnectClock(timings: WebSocketConnectTimings(), startedAt: .now))
        let text = String(decoding: opening.requestBytes, as: UTF8.self)
        let expected = "GET /feed?x=1 HTTP/1.1\r\n"
            + "Host: 127.0.0.1:9001\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(opening.key)\r\n"
            + "Sec-WebSocket-Version: 13\r\n"
            + "Authorization: Bearer t\r\n"
            + "Cookie: a=1\r\n"
            + "\r\n"
        #expect(text == expected)
    }

    @Test("a 101 answer sent one byte at a time opens the connection with the same head as a whole one")
    func byteByByteAnswer() async throws {
        try await withTestServer { server in
            func responseHead(_ path: String) async throws -> [String] {
                let heads = AnnotatedMutex<[String]>([])
                var configuration = WebSocketConfiguration()
                configuration.wireEventObserver = { event in
                    if event.kind == .handshakeResponseReceived, let head = event.httpHead { heads.withLock { $0.append(head) } }
                }
                let connection = try await WebSocket.connect(to: server.url(path: path), configuration: configuration)
                connection.connection.requestClose(code: .normalClosure, reason: "")
                let head = try #require(heads.withLock { $0.first })
                // The accept value answers each connection's own key.
                return head.split(separator: "\r\n").map(String.init).filter { !$0.hasPrefix("Sec-WebSocket-Accept:") }
            }
            let trickled = try await responseHead("/hostile/slowloris?ms=1")
            let whole = try await responseHead("/hostile/reserved-bits")
            #expect(trickled == whole)
            #expect(trickled.first?.hasPrefix("HTTP/1.1 101") == true)
        }
    }
}
