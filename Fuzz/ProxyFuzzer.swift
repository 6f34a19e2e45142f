import WebSocketCore

/// libFuzzer target for what a proxy or a user's settings can hand the connect path:
/// ``SOCKS5Handshake`` fed a proxy's bytes, and the text parsers of ``WebSocketURL``
/// (`ws+unix:` included), ``ProxyAddress`` and ``ProxyEnvironment``.
///
/// Input layout: a flags byte (bit 0: credentials; bit 1: a host name destination, else
/// an address; bit 2: IPv6), a ``ChunkPlan``, then the proxy's bytes, which also serve as
/// the text given to the parsers.
///
/// The proxy's stream is read in one piece and in the planned chunks; both readings must
/// agree on every request sent, on the outcome and on the bytes left over. A request is
/// only sent after a complete answer, and `tunnelOpen` only after the reply's full length.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProxy(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let plan = input.chunkPlan()
    let stream = input.remaining

    let destination: SOCKS5Handshake.Destination = flags & 2 != 0
        ? .hostName("example.org")
        : .address(flags & 4 != 0 ? Array(repeating: 0xAB, count: 16) : [10, 0, 0, 1])
    let credentials: (user: String, password: String)? = flags & 1 != 0 ? ("ann", "s3cret") : nil
    let whole = socks(destination, credentials, [stream])
    let chunked = socks(destination, credentials, plan.chunks(of: stream))
    check(whole == chunked, "one piece and chunks \(plan.sizes) differ:\n  \(whole)\n  \(chunked)")
    if case .opened(let leftover) = whole.end {
        check(leftover.count <= stream.count, "more left over than was received")
    }

    let text = String(decoding: stream, as: UTF8.self)
    if let url = try? WebSocketURL(parsing: text) {
        check(!url.pathAndQuery.isEmpty && url.pathAndQuery.first == "/", "a URL's path must start with '/': \(url)")
        if let path = url.unixSocketPath {
            check(!path.isEmpty && path.utf8.count < 108, "a Unix socket path must fit sun_path: \(path)")
            check(try! WebSocketURL(parsing: url.description) == url, "\(url) does not parse back to itself")
        }
    }
    if let proxy = try? ProxyAddress(parsing: text) {
        check((1...65535).contains(proxy.port) && !proxy.host.isEmpty, "a proxy needs a host and a port: \(proxy)")
        _ = proxy.credentials
    }
    _ = ProxyAddress.redactingCredentials(text)
    for host in ["example.org", "127.0.0.1", "::1", ""] {
        _ = ProxyEnvironment.bypasses(host, exceptions: text)
    }
    return 0
}

/// How one reading of the proxy's stream went.
private struct SOCKSOutcome: Equatable, CustomStringConvertible {
    enum End: Equatable {
        case waiting
        case opened(leftover: [UInt8])
        case failed(ConnectFailure)
    }

    var sent: [[UInt8]] = []
    var end = End.waiting

    var description: String { "sent \(sent), \(end)" }
}

private func socks(
    _ destination: SOCKS5Handshake.Destination, _ credentials: (user: String, password: String)?,
    _ chunks: [UnsafeRawBufferPointer]
) -> SOCKSOutcome {
    var handshake = SOCKS5Handshake(destination: destination, port: 443, credentials: credentials, proxyName: "proxy")
    var outcome = SOCKSOutcome()
    for (index, chunk) in chunks.enumerated() {
        // As the transport does: each read, then again with nothing after every request,
        // since an answer that came early waits in the handshake.
        var next: [UInt8] = Array(chunk)
        while true {
            do {
                switch try handshake.receive(next) {
                case .waitForMore:
                    break
                case .send(let request):
                    outcome.sent.append(request)
                    next = []
                    continue
                case .tunnelOpen(let leftover):
                    // What follows the tunnel's opening belongs to the server: the leftover,
                    // then every later read.
                    outcome.end = .opened(leftover: leftover + chunks[(index + 1)...].flatMap { Array($0) })
                    return outcome
                }
            } catch {
                outcome.end = .failed(error)
                return outcome
            }
            break
        }
    }
    return outcome
}
