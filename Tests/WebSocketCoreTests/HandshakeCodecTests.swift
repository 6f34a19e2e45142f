import Testing
@testable import WebSocketCore
@testable import WebSocketStreams
import WebSocketTestServer

/// What one call of ``HTTPResponseParser/parse(_:)`` produced, comparable in expectations.
private enum ParseOutcome: Equatable {
    case needMore
    case head(HTTPResponseHead, consumed: Int)
    case failed(HTTPResponseParser.Failure)
}

/// Feeds `bytes` to `parser` as one chunk.
private func feed(_ parser: inout HTTPResponseParser, _ bytes: some Collection<UInt8>) -> ParseOutcome {
    Array(bytes).withUnsafeBytes { buffer in
        do throws(HTTPResponseParser.Failure) {
            guard let (head, consumed) = try parser.parse(buffer) else { return .needMore }
            return .head(head, consumed: consumed)
        } catch {
            return .failed(error)
        }
    }
}

/// Parses `text` in one chunk with a fresh parser.
private func parseWhole(_ text: String, maxHeaderBytes: Int = 64 * 1024) -> ParseOutcome {
    var parser = HTTPResponseParser(maxHeaderBytes: maxHeaderBytes)
    return feed(&parser, Array(text.utf8))
}

/// Feeds `bytes` to `collector` as one chunk.
private func feed(_ collector: inout HTTPBodyCollector, _ bytes: some Collection<UInt8>) -> Bool {
    Array(bytes).withUnsafeBytes { collector.append($0) }
}

/// A response head for body-collector tests.
private func head(status: Int = 400, _ fields: [(String, String)]) -> HTTPResponseHead {
    HTTPResponseHead(
        version: "HTTP/1.1", status: status, reasonPhrase: "",
        headers: fields.map { HTTPHeaderField(name: $0.0, value: $0.1) }
    )
}


/// RFC 6455 section 1.3's example key and its accept value.
private let rfcKey = "dGhlIHNhbXBsZSBub25jZQ=="
private let rfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

/// A realistic 101 answer to ``rfcKey``.
private let switchingProtocols = "HTTP/1.1 101 Switching Protocols\r\n"
    + "Upgrade: websocket\r\n"
    + "Connection: Upgrade\r\n"
    + "Sec-WebSocket-Accept: \(rfcAccept)\r\n"
    + "Sec-WebSocket-Protocol: chat\r\n"
    + "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
    + "\r\n"

private let switchingProtocolsHead = HTTPResponseHead(
    version: "HTTP/1.1", status: 101, reasonPhrase: "Switching Protocols",
    headers: [
        HTTPHeaderField(name: "Upgrade", value: "websocket"),
        HTTPHeaderField(name: "Connection", value: "Upgrade"),
        HTTPHeaderField(name: "Sec-WebSocket-Accept", value: rfcAccept),
        HTTPHeaderField(name: "Sec-WebSocket-Protocol", value: "chat"),
        HTTPHeaderField(name: "Sec-WebSocket-Extensions", value: "permessage-deflate; server_no_context_takeover"),
    ]
)

/// An unmasked text frame "Hello" (RFC 6455 section 5.7) that arrives right after the head.
private let helloFrame: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]

@Suite("Opening handshake request")
struct HandshakeRequestTests {
    @Test("request bytes: IPv6 host with port, subprotocols, origin, extension offer, user headers in order")
    func fullRequest() throws {
        let url = try WebSocketURL(parsing: "ws://[::1]:9001/x?y=1")
        let request = HandshakeRequest(
            url: url,
            headers: [(name: "Authorization", value: "Bearer t0ken"), (name: "X-B", value: "2"), (name: "X-A", value: "1")],
            subprotocols: ["chat", "superchat"],
            origin: "http://example.com",
            extensionOffer: "permessage-deflate; client_max_window_bits",
            keyBytes: Array(0..<16)
        )
        #expect(request.key == "AAECAwQFBgcICQoLDA0ODw==")
        let expected = "GET /x?y=1 HTTP/1.1\r\n"
            + "Host: [::1]:9001\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Key: AAECAwQFBgcICQoLDA0ODw==\r\n"
            + "Sec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: chat, superchat\r\n"
            + "Origin: http://example.com\r\n"
            + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
            + "Authorization: Bearer t0ken\r\n"
            + "X-B: 2\r\n"
            + "X-A: 1\r\n"
            + "\r\n"
        #expect(request.bytes == Array(expected.utf8))
    }

    @Test("minimal request: default port omitted, no optional fields, no Basic auth from the URL")
    func minimalRequest() throws {
        let url = try WebSocketURL(parsing: "wss://user:pw@Example.ORG")
        let request = HandshakeRequest(
            url: url, headers: [], subprotocols: [], origin: nil, extensionOffer: nil,
            keyBytes: [UInt8](repeating: 0xFF, count: 16)
        )
        let expected = "GET / HTTP/1.1\r\n"
            + "Host: example.org\r\n"
            + "Upgrade: websocket\r\n"
            + "Connection: Upgrade\r\n"
            + "Sec-WebSocket-Key: /////////////////////w==\r\n"
            + "Sec-WebSocket-Version: 13\r\n"
            + "\r\n"
        #expect(String(decoding: request.bytes, as: UTF8.self) == expected)
    }

    @Test("the Host field carries the port only when it is not the scheme's default")
    func hostPort() throws {
        func host(_ url: String) throws -> String? {
            let request = HandshakeRequest(
                url: try WebSocketURL(parsing: url), headers: [], subprotocols: [], origin: nil, extensionOffer: nil,
                keyBytes: Crypto.randomBytes(count: 16)
            )
            let text = String(decoding: request.bytes, as: UTF8.self)
            return text.split(separator: "\r\n").first { $0.hasPrefix("Host: ") }.map { String($0.dropFirst(6)) }
        }
        #expect(try host("ws://h:80/") == "h")
        #expect(try host("wss://h:443/") == "h")
        #expect(try host("wss://h:80/") == "h:80")
        #expect(try host("ws://h:443/") == "h:443")
        #expect(try host("ws://[::1]/") == "[::1]")
    }

    @Test("random keys: 16 fresh bytes each time, base64-encoded")
    func randomKeys() throws {
        let url = try WebSocketURL(parsing: "ws://h/")
        let keys = (0..<8).map { _ in
            HandshakeRequest(url: url, headers: [], subprotocols: [], origin: nil, extensionOffer: nil, keyBytes: Crypto.randomBytes(count: 16)).key
        }
        #expect(Set(keys).count == keys.count)
        for key in keys {
            #expect(key.utf8.count == 24 && key.hasSuffix("==") && !key.hasSuffix("==="))
        }
    }

    @Test("Sec-WebSocket-Accept: RFC 6455 section 1.3's example")
    func acceptExample() {
        #expect(HandshakeRequest.acceptValue(forKey: rfcKey, sha1: Crypto.sha1) == rfcAccept)
        #expect(HandshakeRequest.acceptValue(forKey: "AAECAwQFBgcICQoLDA0ODw==", sha1: Crypto.sha1) != rfcAccept)
    }
}

@Suite("HTTP response head parsing")
struct HTTPResponseParserTests {
    @Test("a 101 followed by a frame, split at every point: the head and the exact bytes it used")
    func everySplit() {
        let head = Array(switchingProtocols.utf8)
        let input = head + helloFrame
        for split in 0...input.count {
            var parser = HTTPResponseParser()
            let first = feed(&parser, input[..<split])
            if split >= head.count {
                #expect(first == .head(switchingProtocolsHead, consumed: head.count), "split \(split)")
            } else {
                #expect(first == .needMore, "split \(split)")
                let second = feed(&parser, input[split...])
                #expect(second == .head(switchingProtocolsHead, consumed: head.count - split), "split \(split)")
            }
        }
    }

    @Test("three chunks, split at every pair of points")
    func everyPairOfSplits() {
        let head = Array(switchingProtocols.utf8)
        let input = head + helloFrame
        for first in stride(from: 0, through: head.count, by: 1) {
            for second in stride(from: first, through: input.count, by: 3) {
                var parser = HTTPResponseParser()
                var result: (HTTPResponseHead, Int, Int)?
                for (index, chunk) in [input[..<first], input[first..<second], input[second...]].enumerated() {
                    if case .head(let parsed, let consumed) = feed(&parser, chunk) {
                        result = (parsed, index, chunk.startIndex + consumed)
                        break
                    }
                }
                #expect(result?.0 == switchingProtocolsHead)
                #expect(result?.2 == head.count, "splits \(first), \(second)")
            }
        }
    }

    @Test("byte by byte")
    func byteByByte() {
        var parser = HTTPResponseParser()
        let input = Array(switchingProtocols.utf8) + helloFrame
        for (index, byte) in input.enumerated() {
            let outcome = feed(&parser, [byte])
            if index == switchingProtocols.utf8.count - 1 {
                #expect(outcome == .head(switchingProtocolsHead, consumed: 1))
                return
            }
            #expect(outcome == .needMore)
        }
        Issue.record("the head never completed")
    }

    @Test("bare LF line endings, mixed with CRLF")
    func bareLineFeeds() {
        let headText = "HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\r\nConnection: Upgrade\n\n"
        let outcome = parseWhole(headText + "rest")
        let expected = HTTPResponseHead(
            version: "HTTP/1.1", status: 101, reasonPhrase: "Switching Protocols",
            headers: [HTTPHeaderField(name: "Upgrade", value: "websocket"), HTTPHeaderField(name: "Connection", value: "Upgrade")]
        )
        #expect(outcome == .head(expected, consumed: headText.utf8.count))
    }

    @Test("status lines: version, code, optional reason")
    func statusLines() {
        func status(_ line: String) -> HTTPResponseHead? {
            if case .head(let head, _) = parseWhole(line + "\r\n\r\n") { return head }
            return nil
        }
        #expect(status("HTTP/1.0 200 OK") == HTTPResponseHead(version: "HTTP/1.0", status: 200, reasonPhrase: "OK", headers: []))
        #expect(status("HTTP/1.1 101")?.reasonPhrase == "")
        #expect(status("HTTP/1.1 101 ")?.reasonPhrase == "")
        #expect(status("HTTP/1.1 503 Service  Unavailable ")?.reasonPhrase == "Service  Unavailable")
        #expect(status("HTTP/1.1 404 Nicht gefunden ü")?.reasonPhrase == "Nicht gefunden ü")
        #expect(status("HTTP/1.1 999 Odd")?.status == 999)

        for bad in ["HTTP/2 101 Switching", "HTTP/1.1 10 x", "HTTP/1.1 1011 x", "HTTP/1.1 099 x", "ICY 200 OK",
                    "HTTP/1.1 abc", "", "HTTP/1.1  101 x", "http/1.1 101 x", "HTTP/1.x 101 x", "HTTP/1.1 101x"] {
            let outcome = parseWhole(bad + "\r\n\r\n")
            #expect(outcome == .failed(.malformedStatusLine(bad)), "'\(bad)'")
        }
        #expect(parseWhole("HTTP/1.1\t101 x\r\n\r\n") == .failed(.malformedStatusLine("HTTP/1.1\\x09101 x")))
        #expect(
            HTTPResponseParser.Failure.malformedStatusLine("ICY 200 OK").description
                == "the status line 'ICY 200 OK' is not 'HTTP/1.x NNN reason'"
        )
    }

    @Test("the status line is rejected as soon as it is complete, before the head ends")
    func earlyRejection() {
        var parser = HTTPResponseParser()
        #expect(feed(&parser, Array("SSH-2.0-OpenSSH_9.6\r\n".utf8)) == .failed(.malformedStatusLine("SSH-2.0-OpenSSH_9.6")))
        #expect(feed(&parser, Array("\r\n".utf8)) == .failed(.malformedStatusLine("SSH-2.0-OpenSSH_9.6")), "failures stick")
    }

    @Test("malformed header lines, with their messages")
    func malformedHeaders() {
        let status = "HTTP/1.1 101 Switching Protocols\r\n"
        let cases: [(String, HTTPResponseParser.Failure, String)] = [
            ("Upgrade websocket\r\n\r\n", .headerLineWithoutColon("Upgrade websocket"),
             "the header line 'Upgrade websocket' has no colon"),
            ("Upgrade : websocket\r\n\r\n", .invalidHeaderName("Upgrade : websocket"),
             "the header line 'Upgrade : websocket' does not start with a valid field name"),
            (": websocket\r\n\r\n", .invalidHeaderName(": websocket"),
             "the header line ': websocket' does not start with a valid field name"),
            ("Upgrade: websocket\r\n continued\r\n\r\n", .obsoleteLineFolding(" continued"),
             "the header line ' continued' starts with whitespace (obsolete line folding is not allowed)"),
            ("Upgrade: websocket\r\n\tcontinued\r\n\r\n", .obsoleteLineFolding("\\x09continued"),
             "the header line '\\x09continued' starts with whitespace (obsolete line folding is not allowed)"),
            ("Upgrade: web\0socket\r\n\r\n", .nulByte, "the response headers contain a NUL byte"),
            ("Upgrade: web\rsocket\r\n\r\n", .bareCarriageReturn,
             "the response headers contain a carriage return that does not end a line"),
            ("Upgrade: websocket\r\r\n\r\n", .bareCarriageReturn,
             "the response headers contain a carriage return that does not end a line"),
            ("X: y\r\n\r\r\n", .bareCarriageReturn,
             "the response headers contain a carriage return that does not end a line"),
        ]
        for (fields, failure, message) in cases {
            #expect(parseWhole(status + fields) == .failed(failure), "\(fields.debugDescription)")
            #expect(failure.description == message)
        }
        #expect(parseWhole("HTTP/1.1 101 \0\r\n\r\n") == .failed(.nulByte))
    }

    @Test("long or binary lines are shortened and escaped in messages")
    func excerpts() {
        let long = String(repeating: "a", count: 100)
        #expect(parseWhole("HTTP/1.1 200 OK\r\n\(long)\r\n\r\n")
            == .failed(.headerLineWithoutColon(String(repeating: "a", count: 80) + "...")))
        #expect(parseWhole("\u{1B}[31m\r\n\r\n") == .failed(.malformedStatusLine("\\x1B[31m")))
    }

    @Test("header cap: the default limit, and exactly at a small limit")
    func headerCap() {
        let huge = "HTTP/1.1 101 Switching Protocols\r\nX-Filler: " + String(repeating: "x", count: 70_000) + "\r\n\r\n"
        let outcome = parseWhole(huge)
        #expect(outcome == .failed(.headersTooLarge(limit: 65536)))
        #expect(HTTPResponseParser.Failure.headersTooLarge(limit: 65536).description == "the response headers exceed 65536 bytes")

        let exact = "HTTP/1.1 204 No Content\r\nA: b\r\n\r\n"
        let count = exact.utf8.count
        #expect(parseWhole(exact + "after", maxHeaderBytes: count) == .head(
            HTTPResponseHead(version: "HTTP/1.1", status: 204, reasonPhrase: "No Content", headers: [HTTPHeaderField(name: "A", value: "b")]),
            consumed: count
        ))
        #expect(parseWhole(exact, maxHeaderBytes: count - 1) == .failed(.headersTooLarge(limit: count - 1)))

        // The cap covers the whole head across chunks, not each chunk.
        var parser = HTTPResponseParser(maxHeaderBytes: 100)
        let filler = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "y"), count: 40)
        #expect(feed(&parser, filler) == .needMore)
        #expect(feed(&parser, Array(repeating: UInt8(ascii: "y"), count: 60)) == .failed(.headersTooLarge(limit: 100)))
    }

    @Test("values are trimmed; duplicate fields join with ', '; names match case-insensitively")
    func duplicatesAndLookup() {
        let text = "HTTP/1.1 401 Unauthorized\r\n"
            + "WWW-Authenticate:   Basic realm=\"a\" \t\r\n"
            + "Set-Cookie: a=1\r\n"
            + "www-authenticate: Bearer\r\n"
            + "Empty:\r\n"
            + "Set-Cookie:b=2\r\n"
            + "\r\n"
        guard case .head(let head, _) = parseWhole(text) else {
            Issue.record("no head")
            return
        }
        #expect(head.headers.first == HTTPHeaderField(name: "WWW-Authenticate", value: "Basic realm=\"a\""))
        #expect(head.value(of: "www-authenticate") == "Basic realm=\"a\", Bearer")
        #expect(head.value(of: "SET-COOKIE") == "a=1, b=2")
        #expect(head.value(of: "Empty") == "")
        #expect(head.value(of: "Missing") == nil)
        #expect(head.headerDictionary == [
            "WWW-Authenticate": "Basic realm=\"a\", Bearer",
            "Set-Cookie": "a=1, b=2",
            "Empty": "",
        ])
    }

    @Test("an interim 1xx head, then the final one from the same parser")
    func interimResponse() {
        var parser = HTTPResponseParser()
        let input = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8) + Array(switchingProtocols.utf8) + helloFrame
        guard case .head(let interim, let consumed) = feed(&parser, input) else {
            Issue.record("no interim head")
            return
        }
        #expect(interim.status == 100 && interim.headers.isEmpty && consumed == 25)
        #expect(feed(&parser, input[consumed...]) == .head(switchingProtocolsHead, consumed: switchingProtocols.utf8.count))
    }

    @Test("fuzz: random, mutated and re-split responses never crash and report consistent results")
    func fuzz() {
        var random = SeededGenerator(state: 0x5EED_6455)
        let valid = Array(switchingProtocols.utf8) + helloFrame
        let alphabet = Array("HTTP/1.0 :\r\n\t\0abcXYZ-;,=\"".utf8) + [0xFF, 0xC3]
        var (heads, failures, incomplete) = (0, 0, 0)
        for iteration in 0..<4000 {
            var input: [UInt8]
            switch iteration % 4 {
            case 0:
                input = (0..<Int.random(in: 0...120, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            case 1:
                input = valid
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let position = Int.random(in: 0..<input.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: input[position] = UInt8.random(in: 0...255, using: &random)
                    case 1: input.insert(alphabet.randomElement(using: &random)!, at: position)
                    default: input.remove(at: position)
                    }
                }
            case 2:
                input = Array(valid.prefix(Int.random(in: 0..<switchingProtocols.utf8.count, using: &random)))
            default:
                input = Array("HTTP/1.1 200 OK\r\n".utf8)
                    + (0..<Int.random(in: 0...200, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            }
            let cap = Bool.random(using: &random) ? 64 * 1024 : Int.random(in: 1...256, using: &random)
            var whole = HTTPResponseParser(maxHeaderBytes: cap)
            let expected = feed(&whole, input)

            // The same bytes in random chunks must give the same result.
            var parser = HTTPResponseParser(maxHeaderBytes: cap)
            var offset = 0
            var outcome = ParseOutcome.needMore
            while offset < input.count {
                let end = min(input.count, offset + Int.random(in: 1...17, using: &random))
                outcome = feed(&parser, input[offset..<end])
                if case .head(let head, let consumed) = outcome {
                    #expect(consumed >= 1 && consumed <= end - offset)
                    outcome = .head(head, consumed: offset + consumed)
                    break
                }
                if case .failed = outcome { break }
                offset = end
            }
            #expect(outcome == expected, "iteration \(iteration)")
            switch expected {
            case .head(let head, let consumed):
                #expect(consumed <= cap && (100...999).contains(head.status))
                heads += 1
            case .failed: failures += 1
            case .needMore: incomplete += 1
            }
        }
        // The generator must reach all three outcomes, or the loop proves little.
        #expect(heads > 200 && failures > 200 && incomplete > 200, "\(heads) heads, \(failures) failures, \(incomplete) incomplete")
    }
}

@Suite("HTTP response body collection")
struct HTTPBodyCollectorTests {
    @Test("Content-Length, split at every point; bytes after the body are ignored")
    func contentLength() {
        let body = Array("{\"error\":\"unauthorized\"}".utf8)
        let input = body + Array("NEXT RESPONSE".utf8)
        for split in 0...input.count {
            var collector = HTTPBodyCollector(head: head([("Content-Length", "\(body.count)")]))
            let firstDone = feed(&collector, input[..<split])
            #expect(firstDone == (split >= body.count))
            #expect(feed(&collector, input[split...]))
            #expect(collector.body == body && collector.isComplete && !collector.isTruncated)
        }
    }

    @Test("chunked, with extensions and trailers, split at every pair of points")
    func chunked() {
        let encoded = Array("5;name=value\r\nHello\r\n1A \r\n, this is the second chunk\r\n0\r\nTrailer: x\r\n\r\nafter".utf8)
        let decoded = Array("Hello, this is the second chunk".utf8)
        let bodyEnd = encoded.count - 5
        for first in 0...encoded.count {
            for second in first...encoded.count {
                var collector = HTTPBodyCollector(head: head([("Transfer-Encoding", "chunked"), ("Content-Length", "3")]))
                let chunks = [encoded[..<first], encoded[first..<second], encoded[second...]]
                var finishedAt: Int?
                for (index, chunk) in chunks.enumerated() where feed(&collector, chunk) {
                    finishedAt = finishedAt ?? index
                }
                #expect(collector.body == decoded, "splits \(first), \(second)")
                #expect(collector.isComplete && !collector.isTruncated)
                let expectedChunk = bodyEnd <= first ? 0 : (bodyEnd <= second ? 1 : 2)
                #expect(finishedAt == expectedChunk, "splits \(first), \(second)")
            }
        }
    }

    @Test("chunked with bare LF line ends, no trailers")
    func chunkedBareLineFeeds() {
        var collector = HTTPBodyCollector(head: head([("transfer-encoding", "gzip, Chunked")]))
        #expect(feed(&collector, Array("3\nabc\n0\n\n".utf8)))
        #expect(collector.body == Array("abc".utf8))
    }

    @Test("malformed chunked framing stops and keeps what was decoded")
    func malformedChunked() {
        for (text, kept) in [("3\r\nabc\r\nzz\r\nmore", "abc"), ("3\r\nabcX\r\n0\r\n\r\n", "abc"), ("\r\n3\r\nabc", ""),
                             ("3\r\nab", "ab"), ("10000000000000000\r\n", ""), ("-1\r\n", "")] {
            var collector = HTTPBodyCollector(head: head([("Transfer-Encoding", "chunked")]))
            let done = feed(&collector, Array(text.utf8))
            #expect(collector.body == Array(kept.utf8), "\(text.debugDescription)")
            if text == "3\r\nab" {
                #expect(!done)
                collector.connectionClosed()
            } else {
                #expect(done, "\(text.debugDescription)")
            }
            #expect(collector.isComplete && !collector.isTruncated)
        }
    }

    @Test("without a length the body runs until the connection closes")
    func untilClose() {
        for fields in [[], [("Content-Length", "abc")], [("Content-Length", "3, 4")], [("Transfer-Encoding", "gzip")]] {
            var collector = HTTPBodyCollector(head: head(fields))
            #expect(!feed(&collector, Array("part one, ".utf8)))
            #expect(!feed(&collector, Array("part two".utf8)))
            #expect(!collector.isComplete)
            collector.connectionClosed()
            #expect(collector.isComplete && collector.body == Array("part one, part two".utf8) && !collector.isTruncated)
        }
        var duplicated = HTTPBodyCollector(head: head([("Content-Length", "2"), ("content-length", "2")]))
        #expect(feed(&duplicated, Array("okay".utf8)) && duplicated.body == Array("ok".utf8))
    }

    @Test("the cap keeps the first bytes and marks the body truncated")
    func cap() {
        let long = Array("0123456789".utf8)
        var byLength = HTTPBodyCollector(head: head([("Content-Length", "10")]), cap: 4)
        #expect(feed(&byLength, long.prefix(4)), "at the cap with more announced, it stops at once")
        #expect(byLength.body == Array("0123".utf8) && byLength.isTruncated && byLength.isComplete)

        var exactlyCap = HTTPBodyCollector(head: head([("Content-Length", "4")]), cap: 4)
        #expect(feed(&exactlyCap, long))
        #expect(exactlyCap.body == Array("0123".utf8) && !exactlyCap.isTruncated)

        var untilClose = HTTPBodyCollector(head: head([]), cap: 4)
        #expect(!feed(&untilClose, long.prefix(4)), "exactly at the cap it cannot know more follows")
        #expect(feed(&untilClose, long.suffix(6)))
        #expect(untilClose.body == Array("0123".utf8) && untilClose.isTruncated)

        var closedAtCap = HTTPBodyCollector(head: head([]), cap: 4)
        _ = feed(&closedAtCap, long.prefix(4))
        closedAtCap.connectionClosed()
        #expect(closedAtCap.body == Array("0123".utf8) && !closedAtCap.isTruncated && closedAtCap.isComplete)

        var chunked = HTTPBodyCollector(head: head([("Transfer-Encoding", "chunked")]), cap: 4)
        #expect(!feed(&chunked, Array("2\r\n01\r\n2\r\n23\r\n".utf8)))
        #expect(feed(&chunked, Array("1\r\n".utf8)), "a further chunk announced beyond the cap")
        #expect(chunked.body == Array("0123".utf8) && chunked.isTruncated)

        var chunkedExact = HTTPBodyCollector(head: head([("Transfer-Encoding", "chunked")]), cap: 4)
        #expect(feed(&chunkedExact, Array("4\r\n0123\r\n0\r\n\r\n".utf8)))
        #expect(chunkedExact.body == Array("0123".utf8) && !chunkedExact.isTruncated)

        var zeroCap = HTTPBodyCollector(head: head([("Content-Length", "1")]), cap: 0)
        #expect(!zeroCap.isComplete)
        #expect(feed(&zeroCap, [0x41]) && zeroCap.body.isEmpty && zeroCap.isTruncated)
    }

    @Test("1xx, 204, 304, HEAD and 2xx to CONNECT have no body")
    func noBody() {
        let cases: [(Int, String)] = [(204, "GET"), (304, "GET"), (100, "GET"), (103, "GET"), (200, "HEAD"), (200, "CONNECT")]
        for (status, method) in cases {
            var collector = HTTPBodyCollector(head: head(status: status, [("Content-Length", "5")]), requestMethod: method)
            #expect(collector.isComplete, "\(status) \(method)")
            #expect(feed(&collector, Array("hello".utf8)) && collector.body.isEmpty)
        }
        #expect(!HTTPBodyCollector(head: head(status: 400, [("Content-Length", "5")]), requestMethod: "CONNECT").isComplete)
        var zeroLength = HTTPBodyCollector(head: head([("Content-Length", "0")]))
        #expect(zeroLength.isComplete && feed(&zeroLength, [1]) && zeroLength.body.isEmpty)
    }

    @Test("fuzz: random chunked input never crashes, never exceeds the cap, and always ends")
    func fuzz() {
        var random = SeededGenerator(state: 0xB0D1)
        let alphabet = Array("0123456789abcdefXg;= \t\r\n\r\n".utf8)
        for _ in 0..<2000 {
            let cap = Int.random(in: 0...32, using: &random)
            var collector = HTTPBodyCollector(head: head([("Transfer-Encoding", "chunked")]), cap: cap)
            let input = (0..<Int.random(in: 0...80, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            var offset = 0
            while offset < input.count {
                let end = min(input.count, offset + Int.random(in: 1...9, using: &random))
                if feed(&collector, input[offset..<end]) { break }
                offset = end
            }
            collector.connectionClosed()
            #expect(collector.isComplete && collector.body.count <= cap)
        }
    }
}

@Suite("Handshake response validation")
struct HandshakeValidatorTests {
    /// A 101 head with `fields` after the standard three.
    private func response(
        upgrade: String? = "websocket",
        connection: String? = "Upgrade",
        accept: String? = rfcAccept,
        _ fields: [(String, String)] = []
    ) -> HTTPResponseHead {
        var all: [(String, String)] = []
        if let upgrade { all.append(("Upgrade", upgrade)) }
        if let connection { all.append(("Connection", connection)) }
        if let accept { all.append(("Sec-WebSocket-Accept", accept)) }
        return head(status: 101, all + fields)
    }

    private func validate(
        _ head: HTTPResponseHead,
        subprotocols: [String] = ["chat", "superchat"],
        extensions: [String] = ["permessage-deflate"]
    ) -> Result<NegotiatedHandshake, HandshakeValidator.Failure> {
        HandshakeValidator.validate(head, key: rfcKey, sha1: Crypto.sha1, offeredSubprotocols: subprotocols, offeredExtensions: extensions)
    }

    private func message(_ result: Result<NegotiatedHandshake, HandshakeValidator.Failure>) -> String? {
        if case .failure(let failure) = result { return failure.description }
        return nil
    }

    @Test("a valid 101: the parsed example, tokens in lists and any case")
    func success() throws {
        #expect(validate(switchingProtocolsHead) == .success(NegotiatedHandshake(
            subprotocol: "chat",
            extensions: "permessage-deflate; server_no_context_takeover",
            headers: [
                "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": rfcAccept,
                "Sec-WebSocket-Protocol": "chat", "Sec-WebSocket-Extensions": "permessage-deflate; server_no_context_takeover",
            ]
        )))
        let lenient = response(upgrade: "WebSocket", connection: "keep-alive, UPGRADE")
        #expect(validate(lenient, subprotocols: [], extensions: []) == .success(NegotiatedHandshake(
            subprotocol: nil, extensions: nil,
            headers: ["Upgrade": "WebSocket", "Connection": "keep-alive, UPGRADE", "Sec-WebSocket-Accept": rfcAccept]
        )))
        let empties = response([("Sec-WebSocket-Protocol", ""), ("Sec-WebSocket-Extensions", "")])
        guard case .success(let negotiated) = validate(empties, subprotocols: [], extensions: []) else {
            Issue.record("empty fields count as absent")
            return
        }
        #expect(negotiated.subprotocol == nil && negotiated.extensions == nil)
        let quoted = response([("Sec-WebSocket-Extensions", "permessage-deflate; x=\"a, b\"")])
        #expect(try validate(quoted).get().extensions == "permessage-deflate; x=\"a, b\"")
    }

    @Test("any status other than 101 is a rejection")
    func rejected() {
        for status in [200, 301, 401, 426, 503] {
            #expect(validate(head(status: status, [])) == .failure(.rejected(status: status)))
        }
        #expect(HandshakeValidator.Failure.rejected(status: 401).description
            == "the server answered with HTTP 401 instead of 101 Switching Protocols")
    }

    @Test("every failure of a 101, with its message")
    func failures() {
        let cases: [(HTTPResponseHead, String)] = [
            (response(upgrade: nil), "the server's 101 response has no 'Upgrade: websocket' header"),
            (response(upgrade: "h2c"), "the server's 101 response has no 'Upgrade: websocket' header"),
            (response(connection: nil), "the server's 101 response has no 'Connection: Upgrade' header"),
            (response(connection: "keep-alive"), "the server's 101 response has no 'Connection: Upgrade' header"),
            (response(connection: "upgraded"), "the server's 101 response has no 'Connection: Upgrade' header"),
            (response(accept: nil), "the server's 101 response has no Sec-WebSocket-Accept header"),
            (response(accept: "AAAA"),
             "the server's Sec-WebSocket-Accept does not match the key (expected \(rfcAccept), got AAAA)"),
            (response([("Sec-WebSocket-Protocol", "other")]),
             "the server chose subprotocol 'other', which the client did not offer"),
            (response([("Sec-WebSocket-Protocol", "Chat")]),
             "the server chose subprotocol 'Chat', which the client did not offer"),
            (response([("Sec-WebSocket-Protocol", "chat"), ("Sec-WebSocket-Protocol", "superchat")]),
             "the server chose subprotocol 'chat, superchat', which the client did not offer"),
            (response([("Sec-WebSocket-Extensions", "x-webkit-deflate-frame")]),
             "the server accepted extension 'x-webkit-deflate-frame', which the client did not offer"),
            (response([("Sec-WebSocket-Extensions", "permessage-deflate, permessage-deflate; client_max_window_bits=10")]),
             "the server accepted extension 'permessage-deflate' more than once"),
            (response([("Sec-WebSocket-Extensions", "permessage-deflate"), ("Sec-WebSocket-Extensions", "permessage-deflate; a=1")]),
             "the server accepted extension 'permessage-deflate' more than once"),
        ]
        for (index, (head, expected)) in cases.enumerated() {
            let result = validate(head)
            #expect(message(result) == expected, "case \(index)")
            #expect(result == .failure(.invalid(expected)), "case \(index)")
        }
        #expect(message(validate(response([("Sec-WebSocket-Protocol", "chat")]), subprotocols: []))
            == "the server chose subprotocol 'chat', but the client offered none")
        #expect(message(validate(response([("Sec-WebSocket-Extensions", "permessage-deflate")]), extensions: []))
            == "the server accepted extension 'permessage-deflate', which the client did not offer")
    }
}
