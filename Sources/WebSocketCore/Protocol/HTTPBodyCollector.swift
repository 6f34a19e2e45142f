/// Collects the body of an HTTP/1.1 response (in practice, a rejected handshake's error
/// page) from chunks of any size, keeping at most `cap` bytes.
///
/// The body's length follows RFC 9112 section 6.3: none for `1xx`, `204` and `304`
/// responses (and for `HEAD`, or a `2xx` answer to `CONNECT`); chunked transfer coding when
/// `Transfer-Encoding` ends in `chunked` (chunk extensions and trailer fields are read and
/// dropped); otherwise `Content-Length` when it is a valid length; otherwise everything
/// until the connection closes. Malformed chunked framing ends the body with what was
/// decoded so far; an invalid `Content-Length` falls back to reading until the close.
///
/// ```swift
/// var collector = HTTPBodyCollector(head: head)
/// if collector.append(rest) { report(collector.body) }   // and on EOF: collector.connectionClosed()
/// ```
package struct HTTPBodyCollector: Sendable {
    /// How the end of the body is found.
    private enum Framing: Sendable {
        /// The body ends after this many more bytes.
        case length(remaining: Int)
        /// Chunked transfer coding, in the given decoding state.
        case chunked(ChunkedState)
        /// The body ends when the connection closes.
        case untilClose
    }

    /// Where the chunked decoder stands.
    private enum ChunkedState: Sendable {
        /// Reading a chunk-size line (size, optional extensions, line end).
        case sizeLine
        /// Reading chunk data, with this many bytes left in the chunk.
        case data(remaining: Int)
        /// Expecting the line end after a chunk's data.
        case dataLineEnd
        /// After the last chunk: reading trailer lines until the blank one.
        case trailerLine
    }

    /// The body bytes collected so far: at most `cap` of them.
    package private(set) var body: [UInt8] = []
    /// Whether no more input is wanted: the body ended, the connection closed, the framing
    /// was malformed, or the cap was reached.
    package private(set) var isComplete = false
    /// Whether the body was longer than `cap` and only its first `cap` bytes were kept.
    package private(set) var isTruncated = false

    /// The most body bytes kept.
    package let cap: Int
    /// How the body's end is found.
    private var framing: Framing
    /// The partial size or trailer line while decoding chunked framing.
    private var line: [UInt8] = []

    /// The longest chunk-size or trailer line accepted before the framing counts as malformed.
    private static let maxLineLength = 8 * 1024

    /// A collector for the body that follows `head`, a response to `requestMethod`.
    package init(head: HTTPResponseHead, requestMethod: String = "GET", cap: Int = 64 * 1024) {
        precondition(cap >= 0, "the body cap must not be negative")
        self.cap = cap
        let method = requestMethod.uppercased()
        let hasNoBody = (100...199).contains(head.status) || head.status == 204 || head.status == 304
            || method == "HEAD" || (method == "CONNECT" && (200...299).contains(head.status))
        if hasNoBody {
            framing = .length(remaining: 0)
        } else if let transferEncoding = head.value(of: "Transfer-Encoding") {
            let codings = transferEncoding.split(separator: ",").map { $0.trimmingSpacesAndTabs().lowercased() }
            framing = codings.last == "chunked" ? .chunked(.sizeLine) : .untilClose
        } else if let length = head.value(of: "Content-Length").flatMap(Self.contentLength) {
            framing = .length(remaining: length)
        } else {
            framing = .untilClose
        }
        if case .length(0) = framing { isComplete = true }
    }

    /// Takes the next bytes of the connection.
    ///
    /// - Returns: `true` once no more input is wanted (see ``isComplete``). Bytes after the
    ///   body's end are ignored.
    package mutating func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        var input = chunk[...]
        while !isComplete, !input.isEmpty {
            switch framing {
            case .untilClose:
                keep(input)
                input = input[input.endIndex...]
            case .length(let remaining):
                let taken = input.prefix(remaining)
                keep(taken)
                input = input[taken.endIndex...]
                framing = .length(remaining: remaining - taken.count)
                if remaining == taken.count { isComplete = true }
            case .chunked(let state):
                input = decodeChunked(input, state: state)
            }
            if !isComplete, body.count == cap, knowsMoreBodyFollows { markTruncated() }
        }
        return isComplete
    }

    /// Records that the connection closed: the body is whatever arrived.
    package mutating func connectionClosed() {
        isComplete = true
    }

    /// Whether bytes beyond those collected certainly belong to the body.
    private var knowsMoreBodyFollows: Bool {
        switch framing {
        case .length(let remaining): remaining > 0
        case .chunked(.data(let remaining)): remaining > 0
        case .chunked, .untilClose: false
        }
    }

    /// Appends body bytes up to the cap; a byte beyond it makes the body truncated.
    private mutating func keep(_ bytes: Slice<UnsafeRawBufferPointer>) {
        let room = cap - body.count
        body.append(contentsOf: bytes.prefix(room))
        if bytes.count > room { markTruncated() }
    }

    /// Stops collecting because the body is longer than the cap.
    private mutating func markTruncated() {
        isTruncated = true
        isComplete = true
    }

    /// Advances the chunked decoder from `state` over a prefix of `input`; returns the rest.
    private mutating func decodeChunked(
        _ input: Slice<UnsafeRawBufferPointer>,
        state: ChunkedState
    ) -> Slice<UnsafeRawBufferPointer> {
        switch state {
        case .data(let remaining):
            let taken = input.prefix(remaining)
            keep(taken)
            framing = .chunked(remaining == taken.count ? .dataLineEnd : .data(remaining: remaining - taken.count))
            return input[taken.endIndex...]
        case .sizeLine, .dataLineEnd, .trailerLine:
            guard let lineFeed = input.firstIndex(of: UInt8(ascii: "\n")) else {
                line.append(contentsOf: input)
                if line.count > Self.maxLineLength { isComplete = true }
                return input[input.endIndex...]
            }
            line.append(contentsOf: input[..<lineFeed])
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            finishChunkedLine(state: state)
            line.removeAll(keepingCapacity: true)
            return input[(lineFeed + 1)...]
        }
    }

    /// Interprets a complete framing line read in `state` (line end already removed).
    private mutating func finishChunkedLine(state: ChunkedState) {
        switch state {
        case .sizeLine:
            guard let size = Self.chunkSize(line) else {
                isComplete = true
                return
            }
            framing = .chunked(size == 0 ? .trailerLine : .data(remaining: size))
        case .dataLineEnd:
            if line.isEmpty {
                framing = .chunked(.sizeLine)
            } else {
                isComplete = true
            }
        case .trailerLine:
            if line.isEmpty { isComplete = true }
        case .data:
            preconditionFailure("chunk data has no line")
        }
    }

    /// The size from a chunk-size line (`1a;name=value`), or `nil` when it is malformed.
    private static func chunkSize(_ line: [UInt8]) -> Int? {
        let sizeText = String(decoding: line.prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
            .trimmingSpacesAndTabs().utf8
        guard !sizeText.isEmpty, sizeText.count <= 15 else { return nil }
        var size = 0
        for byte in sizeText {
            guard let digit = hexValue(byte) else { return nil }
            size = size << 4 | digit
        }
        return size
    }

    /// The value of a hexadecimal digit, or `nil`.
    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// A `Content-Length` value as a length: digits only; a list of identical values (as
    /// left by joining duplicate fields) counts as one. `nil` when invalid.
    private static func contentLength(_ value: String) -> Int? {
        let lengths = value.split(separator: ",", omittingEmptySubsequences: false).map { element -> Int? in
            let digits = element.trimmingSpacesAndTabs()
            guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return nil
            }
            return Int(digits)
        }
        guard let first = lengths.first, let length = first, lengths.allSatisfy({ $0 == length }) else { return nil }
        return length
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate func trimmingSpacesAndTabs() -> String {
        let isWhitespace = { (character: Character) in character == " " || character == "\t" }
        guard let first = firstIndex(where: { !isWhitespace($0) }),
              let last = lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(self[first...last])
    }
}
