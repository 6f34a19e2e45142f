/// Reads an HTTP/1.x response's status line and header block from bytes arriving in
/// chunks of any size (RFC 9112 sections 2 to 5).
///
/// Feed each chunk to ``parse(_:)``: it returns `nil` while the head is incomplete (keeping
/// the partial line internally) and, once the blank line ending the head arrives, the head
/// with the number of bytes of *that* chunk it used. The rest of the chunk is not the
/// parser's: WebSocket frames or a response body may follow the head in the same read.
///
/// Lines end with CRLF; a bare LF is tolerated. The parser rejects a status line other than
/// `HTTP/1.x NNN reason`, header lines without a colon or with a name that is not a token,
/// obsolete line folding, NUL bytes, carriage returns inside a line, and heads larger than
/// the cap. Once it has thrown, every later call throws the same failure. After returning a
/// head it starts afresh, so an interim `1xx` response can be followed by the final one.
package struct HTTPResponseParser: Sendable {
    /// Why a response head could not be parsed.
    package enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The head (status line, fields and the blank line) is longer than `limit` bytes.
        case headersTooLarge(limit: Int)
        /// The first line is not `HTTP/1.x NNN reason`; carries the line, escaped and shortened.
        case malformedStatusLine(String)
        /// A header line has no colon; carries the line, escaped and shortened.
        case headerLineWithoutColon(String)
        /// A header line's name is empty or not an HTTP token (e.g. whitespace before the colon).
        case invalidHeaderName(String)
        /// A header line starts with whitespace: obsolete line folding (RFC 9112 section 5.2).
        case obsoleteLineFolding(String)
        /// The head contains a NUL byte.
        case nulByte
        /// A carriage return appears inside a line instead of just before its line feed.
        case bareCarriageReturn

        /// A sentence saying what was wrong, e.g. `the response headers exceed 65536 bytes`.
        package var description: String {
            switch self {
            case .headersTooLarge(let limit): "the response headers exceed \(limit) bytes"
            case .malformedStatusLine(let line): "the status line '\(line)' is not 'HTTP/1.x NNN reason'"
            case .headerLineWithoutColon(let line): "the header line '\(line)' has no colon"
            case .invalidHeaderName(let line): "the header line '\(line)' does not start with a valid field name"
            case .obsoleteLineFolding(let line):
                "the header line '\(line)' starts with whitespace (obsolete line folding is not allowed)"
            case .nulByte: "the response headers contain a NUL byte"
            case .bareCarriageReturn: "the response headers contain a carriage return that does not end a line"
            }
        }
    }

    /// The most bytes a head may take, the blank line included.
    package let maxHeaderBytes: Int
    /// The bytes of the line being read, without its line feed.
    private var line: [UInt8] = []
    /// How many bytes of the current head have been seen so far.
    private var headByteCount = 0
    /// The head under construction; `nil` until the status line is complete.
    private var pendingHead: HTTPResponseHead?
    /// The failure already thrown, thrown again by every later call.
    private var failure: Failure?

    /// A parser that rejects heads longer than `maxHeaderBytes`.
    package init(maxHeaderBytes: Int = 64 * 1024) {
        precondition(maxHeaderBytes > 0, "maxHeaderBytes must be positive")
        self.maxHeaderBytes = maxHeaderBytes
    }

    /// Consumes `chunk` up to the end of the head.
    ///
    /// - Returns: `nil` when every byte of `chunk` belonged to a head that is still
    ///   incomplete; otherwise the head and how many leading bytes of `chunk` ended it.
    /// - Throws: ``Failure`` when the bytes are not a valid response head.
    package mutating func parse(_ chunk: UnsafeRawBufferPointer) throws(Failure) -> (head: HTTPResponseHead, consumed: Int)? {
        if let failure { throw failure }
        do throws(Failure) {
            for index in chunk.indices {
                let byte = chunk[index]
                guard byte != 0 else { throw .nulByte }
                headByteCount += 1
                guard headByteCount <= maxHeaderBytes else { throw .headersTooLarge(limit: maxHeaderBytes) }
                guard byte == Self.lineFeed else {
                    line.append(byte)
                    continue
                }
                if let head = try finishLine() {
                    headByteCount = 0
                    pendingHead = nil
                    return (head, index + 1)
                }
            }
            return nil
        } catch {
            failure = error
            throw error
        }
    }

    /// Interprets the completed ``line``; returns the head when the line was the blank one.
    private mutating func finishLine() throws(Failure) -> HTTPResponseHead? {
        defer { line.removeAll(keepingCapacity: true) }
        var content = line[...]
        if content.last == Self.carriageReturn { content = content.dropLast() }
        guard !content.contains(Self.carriageReturn) else { throw .bareCarriageReturn }

        guard var head = pendingHead else {
            pendingHead = try Self.parseStatusLine(content)
            return nil
        }
        if content.isEmpty { return head }
        guard content.first != Self.space, content.first != Self.tab else {
            throw .obsoleteLineFolding(Self.excerpt(content))
        }
        head.headers.append(try Self.parseField(content))
        pendingHead = head
        return nil
    }

    /// Parses `HTTP/1.x NNN reason` (the reason phrase and the space before it may be absent).
    private static func parseStatusLine(_ line: ArraySlice<UInt8>) throws(Failure) -> HTTPResponseHead {
        let bytes = Array(line)
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, bytes.starts(with: prefix), isDigit(bytes[7]), bytes[8] == space,
              bytes[9...11].allSatisfy(isDigit), bytes[9] != UInt8(ascii: "0"),
              bytes.count == 12 || bytes[12] == space else {
            throw .malformedStatusLine(excerpt(line))
        }
        let status = bytes[9...11].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        let reason = bytes.count > 13 ? String(decoding: trimmed(bytes[13...]), as: UTF8.self) : ""
        return HTTPResponseHead(
            version: String(decoding: bytes[0..<8], as: UTF8.self),
            status: status,
            reasonPhrase: reason,
            headers: []
        )
    }

    /// Parses `name: value`, trimming optional whitespace around the value.
    private static func parseField(_ line: ArraySlice<UInt8>) throws(Failure) -> HTTPHeaderField {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw .headerLineWithoutColon(excerpt(line))
        }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            throw .invalidHeaderName(excerpt(line))
        }
        return HTTPHeaderField(
            name: String(decoding: name, as: UTF8.self),
            value: String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
        )
    }

    /// `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isWhitespace = { (byte: UInt8) in byte == space || byte == tab }
        guard let first = bytes.firstIndex(where: { !isWhitespace($0) }),
              let last = bytes.lastIndex(where: { !isWhitespace($0) }) else { return [] }
        return bytes[first...last]
    }

    /// `line` for an error message: printable ASCII as is, other bytes as `\xNN`, at most 80 bytes.
    private static func excerpt(_ line: ArraySlice<UInt8>) -> String {
        var text = ""
        for byte in line.prefix(80) {
            if (0x20..<0x7F).contains(byte) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return line.count > 80 ? text + "..." : text
    }

    /// Whether `byte` is an ASCII digit.
    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// Whether `byte` may appear in a field name (RFC 9110 `tchar`).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
}
