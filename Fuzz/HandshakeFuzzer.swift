import WebSocketCore

/// libFuzzer target for the opening handshake's answer: ``HTTPResponseParser``, then
/// ``HandshakeValidator``, ``HTTPBodyCollector`` and ``DeflateParameters/init(negotiating:)``.
///
/// Input layout: a flags byte (bit 0: a small head limit; bits 1-2: the request method;
/// bit 3: a small body cap; bit 4: subprotocols offered), the head limit's byte, the body
/// cap's byte, a ``ChunkPlan``, then the bytes a server sends.
///
/// The stream is read in one piece and in the planned chunks the way the transport reads
/// it: heads until one that is not an interim 1xx, then the body. Both readings must agree
/// on every head, where it ended, the failure and the body. The final head then goes through
/// the validator and, when it names extensions, permessage-deflate negotiation; negotiated
/// parameters must compress and decompress the rest of the stream back to itself.

/// The RFC 6455 section 1.3 example key; the answer it expects is `s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`.
private let handshakeKey = "dGhlIHNhbXBsZSBub25jZQ=="

/// The reader's settings decoded from the input's first bytes.
private struct HandshakeSetup {
    var maxHeaderBytes: Int
    var requestMethod: String
    var bodyCap: Int
    var offeredSubprotocols: [String]

    init(flags: UInt8, headLimitByte: UInt8, capByte: UInt8) {
        maxHeaderBytes = flags & 1 != 0 ? Int(headLimitByte) * 16 + 1 : 64 * 1024
        requestMethod = ["GET", "HEAD", "CONNECT", "get"][Int(flags >> 1 & 3)]
        bodyCap = flags & 8 != 0 ? Int(capByte) : 64 * 1024
        offeredSubprotocols = flags & 16 != 0 ? ["chat", "superchat"] : []
    }
}

/// What one way of reading the stream produced.
private struct HandshakeOutcome: Equatable {
    /// Every head parsed, with the stream offset just past it.
    var heads: [(head: HTTPResponseHead, end: Int)] = []
    var failure: HTTPResponseParser.Failure?
    var body: [UInt8] = []
    var isBodyComplete = false
    var isBodyTruncated = false

    static func == (left: Self, right: Self) -> Bool {
        left.heads.map(\.head) == right.heads.map(\.head) && left.heads.map(\.end) == right.heads.map(\.end)
            && left.failure == right.failure && left.body == right.body
            && left.isBodyComplete == right.isBodyComplete && left.isBodyTruncated == right.isBodyTruncated
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let setup = HandshakeSetup(flags: input.byte(), headLimitByte: input.byte(), capByte: input.byte())
    let plan = input.chunkPlan()
    let stream = input.remaining

    let whole = read(setup, [stream])
    let chunked = read(setup, plan.chunks(of: stream))
    check(whole == chunked, "one piece and chunks \(plan.sizes) differ:\n  \(whole)\n  \(chunked)")

    guard let (finalHead, end) = whole.heads.last else { return 0 }
    let rest = UnsafeRawBufferPointer(rebasing: stream[end...])
    validate(finalHead, setup: setup, rest: rest)
    return 0
}

/// Reads `chunks` as the transport does: heads (skipping interim 1xx answers), then the
/// body of the final one until the stream ends, which counts as the connection closing.
private func read(_ setup: HandshakeSetup, _ chunks: [UnsafeRawBufferPointer]) -> HandshakeOutcome {
    var parser = HTTPResponseParser(maxHeaderBytes: setup.maxHeaderBytes)
    var collector: HTTPBodyCollector?
    var outcome = HandshakeOutcome()
    var offset = 0
    for chunk in chunks {
        var rest = chunk
        defer { offset += chunk.count }
        while outcome.failure == nil {
            if var body = collector {
                if !body.isComplete { _ = body.append(rest) }
                collector = body
                break
            }
            do {
                guard let (head, consumed) = try parser.parse(rest) else { break }
                check((1...rest.count).contains(consumed), "parse used \(consumed) of \(rest.count) bytes")
                checkHead(head)
                rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
                outcome.heads.append((head, offset + chunk.count - rest.count))
                let isInterim = (100...199).contains(head.status) && head.status != 101
                if !isInterim {
                    collector = HTTPBodyCollector(head: head, requestMethod: setup.requestMethod, cap: setup.bodyCap)
                }
            } catch {
                check(!error.description.isEmpty, "a parse failure without a description")
                outcome.failure = error
                var again = parser
                let repeated = Result { () throws(HTTPResponseParser.Failure) in try again.parse(rest) }
                check(repeated.failureValue == error, "a failed parser went on: \(repeated)")
            }
        }
    }
    if var body = collector {
        outcome.isBodyComplete = body.isComplete
        body.connectionClosed()
        check(body.isComplete, "the body is not complete after the connection closed")
        check(body.body.count <= setup.bodyCap, "\(body.body.count) body bytes kept over a cap of \(setup.bodyCap)")
        check(!body.isTruncated || body.body.count == setup.bodyCap, "truncated at \(body.body.count) bytes, not at the cap")
        outcome.body = body.body
        outcome.isBodyTruncated = body.isTruncated
    }
    return outcome
}

/// The promises a parsed head keeps: a three-digit status not starting with 0, an
/// `HTTP/1.x` version, token field names, values without surrounding whitespace or line breaks.
private func checkHead(_ head: HTTPResponseHead) {
    check((100...999).contains(head.status), "status \(head.status)")
    check(head.version.utf8.count == 8 && head.version.hasPrefix("HTTP/1."), "version \(head.version)")
    let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
    for field in head.headers {
        check(!field.name.isEmpty && field.name.utf8.allSatisfy(tchar.contains), "field name \(field.name.debugDescription)")
        let value = Array(field.value.utf8)
        check(!value.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }), "field value \(field.value.debugDescription)")
        check(value.first != 0x20 && value.first != 0x09 && value.last != 0x20 && value.last != 0x09,
              "untrimmed field value \(field.value.debugDescription)")
        check(head.value(of: field.name.uppercased()) != nil, "value(of:) misses \(field.name)")
    }
    _ = head.headerDictionary
}

/// Validates the final head and negotiates permessage-deflate from it; negotiated
/// parameters must round-trip `rest` (twice, so context takeover is used) through a
/// deflater and an inflater.
private func validate(_ head: HTTPResponseHead, setup: HandshakeSetup, rest: UnsafeRawBufferPointer) {
    let result = HandshakeValidator.validate(
        head, key: handshakeKey, sha1: sha1, offeredSubprotocols: setup.offeredSubprotocols,
        offeredExtensions: [DeflateParameters.extensionName]
    )
    switch result {
    case .success(let negotiated):
        check(head.status == 101, "validated a \(head.status)")
        if let subprotocol = negotiated.subprotocol {
            check(setup.offeredSubprotocols.contains(subprotocol), "accepted subprotocol \(subprotocol)")
        }
    case .failure(.rejected(let status)):
        check(status == head.status && status != 101, "rejected \(status) for a \(head.status)")
    case .failure(.invalid(let reason)):
        check(head.status == 101, "a \(head.status) called invalid instead of rejected")
        check(!reason.isEmpty, "an invalid handshake without a reason")
    }
    if case .failure(let failure) = result { check(!failure.description.isEmpty, "a failure without a description") }

    guard let extensions = head.value(of: "Sec-WebSocket-Extensions") else { return }
    let parameters: DeflateParameters
    do {
        parameters = try DeflateParameters(negotiating: extensions)
    } catch {
        check(!error.description.isEmpty, "a negotiation failure without a description")
        return
    }
    for bits in [parameters.clientMaxWindowBits, parameters.serverMaxWindowBits] {
        check((8...15).contains(bits), "window bits \(bits) from \(extensions.debugDescription)")
    }
    _ = MessageInflater(parameters: parameters)
    guard MessageDeflater.canCompress(with: parameters),
          let deflater = try? MessageDeflater(parameters: parameters) else { return }
    // The peer's inflater resets exactly when this deflater does.
    var peer = DeflateParameters()
    peer.serverNoContextTakeover = parameters.clientNoContextTakeover
    let inflater = MessageInflater(parameters: peer)
    let message = UnsafeRawBufferPointer(rebasing: rest.prefix(1024))
    for round in 1...2 {
        var compressed: [UInt8] = []
        deflater.compress(message, into: &compressed)
        var output: [UInt8] = []
        var status = compressed.withUnsafeBytes { inflater.inflate($0, into: &output, limit: message.count) }
        if case .ok = status { status = inflater.finishMessage(into: &output, limit: message.count) }
        check(status == .ok && output.elementsEqual(message),
              "round \(round) under \(extensions.debugDescription): \(status), \(output.count) of \(message.count) bytes")
    }
}

extension Result {
    /// The error, or `nil` for a success.
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
