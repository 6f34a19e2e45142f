/// What the test server does with a connection, chosen by the request path and query.
///
/// | Path | Behaviour |
/// |---|---|
/// | `/echo?delay=MS` | Sends every message back with its type (after MS milliseconds, when given: a close that comes first drops the replies, as some servers do) |
/// | `/push?count=N&size=S&type=binary|text&fragment=F` | Sends N messages of S bytes (each starts with its sequence number; in F-byte fragments when F > 0), then echoes |
/// | `/close?code=C&reason=R&after=MS` | After MS milliseconds, closes with code C and reason R |
/// | `/drop?after=MS` | After MS milliseconds, drops TCP without a close frame |
/// | `/reject?status=S&body=B&location=L` | Answers the upgrade with HTTP S (401 adds `WWW-Authenticate`, 429/503 `Retry-After`, `location` a `Location`) |
/// | `/redirect?status=S&to=URL&hops=N&loop=1` | Answers the upgrade with redirect S (default 302) to `to` (absolute or relative; default `/echo`); with `hops`, through N redirects in all; with `loop`, to itself |
/// | `/slow?ms=MS` | Answers the upgrade only after MS milliseconds, then closes with 1000 |
/// | `/hang` | Never answers the upgrade |
/// | `/uncompressed?extensions=E` | Accepts permessage-deflate (answering `Sec-WebSocket-Extensions: E` when given, whatever was offered), then sends an uncompressed text frame and a pong with payload, then closes with 1000 |
/// | `/stall?resume=MS` | Completes the handshake, then stops reading (so never answers pings); with `resume`, reads again after MS milliseconds and echoes what it reads |
/// | `/headers` | Sends the request headers it saw as one JSON text message, then echoes |
/// | `/bad-utf8?split=1` | Sends a text message that is not valid UTF-8 (with `split`, the bad sequence spans two fragments) |
/// | `/hostile/<kind>` | Misbehaves below the WebSocket layer, byte by byte (see ``HostileBehaviour``) |
/// | `/huge-headers` | Answers 101, then sends 1 MiB of header lines and never ends the header block |
/// | `/frame-echo` | Echoes every frame as it arrives (pings answered), without libwebsockets' ws role: for benchmarks that should measure the client, not lws's byte-at-a-time server parser |
/// | `/tls/<kind>` | Breaks TLS itself after the 101 (see ``TLSMisbehaviour``) |
///
/// Any other path is rejected with 404.
///
/// Raw routes (``isRaw``) are served without libwebsockets: on a plain server by taking the
/// socket from it, on a TLS server by the raw TLS listener (``RawTLSListener``), which also
/// serves the `/tls/` routes; libwebsockets' TLS listener rejects both with 501.
enum ServerRoute: Sendable, Equatable {
    case echo(delayMilliseconds: Int)
    case push(count: Int, size: Int, binary: Bool, fragment: Int)
    case close(code: UInt16, reason: String, afterMilliseconds: Int)
    case drop(afterMilliseconds: Int)
    case reject(status: Int, body: String, retryAfter: String?, location: String?)
    case slow(milliseconds: Int)
    case hang
    case uncompressed(extensions: String)
    case stall(resumeAfterMilliseconds: Int?)
    case headers
    case badUTF8(split: Bool)
    case hostile(HostileBehaviour)
    case frameEcho
    case hugeHeaders
    case tls(TLSMisbehaviour)
    /// A path given to ``TestServer/start(port:host:tls:compression:recordTexts:logger:unixSocketPath:handlers:)``:
    /// its ``TestServer/Handler`` speaks to the client.
    case handler

    /// The route of a request target, e.g. `/push?count=3`.
    init(target: String) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first.map(String.init) ?? "/"
        self.init(path: path.isEmpty ? "/" : path, query: parts.count > 1 ? Self.parseQuery(String(parts[1])) : [:])
    }

    init(path: String, query: [String: String]) {
        func int(_ name: String, _ fallback: Int) -> Int { query[name].flatMap { Int($0) } ?? fallback }
        switch path {
        case "/", "/echo":
            self = .echo(delayMilliseconds: max(0, int("delay", 0)))
        case "/push":
            self = .push(count: max(0, int("count", 10)), size: max(0, int("size", 128)),
                         binary: query["type"] != "text", fragment: max(0, int("fragment", 0)))
        case "/close":
            self = .close(code: UInt16(clamping: int("code", 1000)), reason: query["reason"] ?? "", afterMilliseconds: max(0, int("after", 0)))
        case "/drop":
            self = .drop(afterMilliseconds: max(0, int("after", 0)))
        case "/reject":
            self = .reject(status: int("status", 403), body: query["body"] ?? "rejected by the test server",
                           retryAfter: query["retry-after"], location: query["location"])
        case "/redirect":
            self = .reject(status: int("status", 302), body: "", retryAfter: nil, location: Self.redirectTarget(query))
        case "/slow":
            self = .slow(milliseconds: max(0, int("ms", 1000)))
        case "/hang":
            self = .hang
        case "/uncompressed":
            self = .uncompressed(extensions: query["extensions"] ?? "permessage-deflate")
        case "/stall":
            self = .stall(resumeAfterMilliseconds: query["resume"].flatMap(Int.init).map { max(0, $0) })
        case "/headers":
            self = .headers
        case "/bad-utf8":
            self = .badUTF8(split: query["split"] != nil)
        case "/frame-echo":
            self = .frameEcho
        case "/huge-headers":
            self = .hugeHeaders
        case _ where path.hasPrefix("/hostile/"):
            let kind = String(path.dropFirst("/hostile/".count))
            if let behaviour = HostileBehaviour(kind: kind, query: query) {
                self = .hostile(behaviour)
            } else {
                self = .reject(status: 404, body: "no hostile behaviour \(kind)", retryAfter: nil, location: nil)
            }
        case _ where path.hasPrefix("/tls/"):
            let kind = String(path.dropFirst("/tls/".count))
            if let misbehaviour = TLSMisbehaviour(kind: kind) {
                self = .tls(misbehaviour)
            } else {
                self = .reject(status: 404, body: "no TLS misbehaviour \(kind)", retryAfter: nil, location: nil)
            }
        default:
            self = .reject(status: 404, body: "no route \(path)", retryAfter: nil, location: nil)
        }
    }

    /// Whether `path` names a built-in route (a handler may not take it): every path but
    /// those answered with "no route".
    static func isBuiltIn(path: String) -> Bool {
        if case .reject(404, let body, _, _) = ServerRoute(path: path, query: [:]), body.hasPrefix("no route") { return false }
        return true
    }

    /// Routes served by taking the socket away from libwebsockets before it answers the upgrade.
    var isRaw: Bool {
        switch self {
        case .slow, .hang, .uncompressed, .hostile, .frameEcho, .hugeHeaders: true
        default: false
        }
    }

    /// Routes only the raw TLS listener serves: raw routes over TLS, and the `/tls/` routes.
    var isServedByRawTLSListener: Bool {
        if case .tls = self { return true }
        return isRaw
    }
}

extension ServerRoute {
    /// Where `/redirect` with `query` points: itself (`loop`), the next of several hops
    /// (`hops` > 1), or `to` (default `/echo`).
    static func redirectTarget(_ query: [String: String]) -> String {
        let status = query["status"].map { "status=\(encode($0))&" } ?? ""
        if query["loop"] != nil { return "/redirect?\(status)loop=1" }
        let target = query["to"] ?? "/echo"
        if let hops = query["hops"].flatMap(Int.init), hops > 1 {
            return "/redirect?\(status)to=\(encode(target))&hops=\(hops - 1)"
        }
        return target
    }

    /// `text` with everything but unreserved characters percent-encoded, for a query value.
    private static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }

    /// Splits `a=1&b=two%20words` into a dictionary (percent escapes and `+` decoded).
    static func parseQuery(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(parts[0])
            result[name] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }

    private static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), utf8.count >= 2,
                      let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
