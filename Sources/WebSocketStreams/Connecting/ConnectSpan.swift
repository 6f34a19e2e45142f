import Tracing
import WebSocketCore

/// The swift-distributed-tracing span around one `connect` (every redirect hop inside it):
/// a client span named `WebSocket connect` with the attributes OpenTelemetry's HTTP client
/// conventions give a request, and the trace context injected into the upgrade request's
/// headers (W3C `traceparent` with an OpenTelemetry tracer) through the active instrument,
/// so the server can join the trace.
///
/// Made only when a tracer is active (bootstrapped, or bound with `withTracer`): without
/// one, ``start(url:)`` returns `nil` and connecting does nothing more.
struct ConnectSpan {
    private let span: any Span

    /// A span for connecting to `url`, or `nil` when no tracer is active.
    static func start(url: WebSocketURL) -> ConnectSpan? {
        let tracer = InstrumentationSystem.tracer
        if tracer is NoOpTracer { return nil }
        let span = tracer.startSpan("WebSocket connect", ofKind: .client)
        span.attributes["http.request.method"] = "GET"
        span.attributes["url.full"] = String(url.description.prefix { $0 != "?" })  // a query may carry tokens
        span.attributes["url.scheme"] = url.isSecure ? "wss" : "ws"
        span.attributes["server.address"] = url.host
        span.attributes["server.port"] = url.port
        return ConnectSpan(span: span)
    }

    /// `headers` with this span's context added by the active instrument (a header the
    /// caller set already, in any case, is kept as it is).
    func injectingContext(into headers: [String: String]) -> [String: String] {
        var carrier = headers
        InstrumentationSystem.instrument.inject(span.context, into: &carrier, using: HeaderInjector())
        return carrier
    }

    /// The connection opened: the peer, the `101`, TLS resumption and the redirects; ends the span.
    func opened(_ timings: WebSocketConnectTimings) {
        if let remote = timings.remoteAddress, let colon = remote.lastIndex(of: ":") {
            span.attributes["network.peer.address"] = String(remote[..<colon]).trimmingCharacters(in: "[]")
            span.attributes["network.peer.port"] = Int(remote[remote.index(after: colon)...])
        }
        span.attributes["http.response.status_code"] = 101
        if timings.tlsHandshake != nil { span.attributes["tls.resumed"] = timings.isTLSSessionResumed }
        if timings.redirects > 0 { span.attributes["http.request.resend_count"] = timings.redirects }
        span.end()
    }

    /// The connect failed with `error` after `redirects` redirects; ends the span.
    func failed(_ error: any Error, redirects: Int) {
        let type = (error as? WebSocketError).map { $0.code.description } ?? (error is CancellationError ? "cancelled" : "\(type(of: error))")
        span.attributes["error.type"] = type
        if let status = (error as? WebSocketError)?.httpStatus { span.attributes["http.response.status_code"] = status }
        if redirects > 0 { span.attributes["http.request.resend_count"] = redirects }
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error, message: (error as? WebSocketError)?.reason))
        span.end()
    }
}

/// Puts a trace context's fields into request headers, leaving alone any the user set.
private struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        guard !carrier.keys.contains(where: { $0.lowercased() == key.lowercased() }) else { return }
        carrier[key] = value
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
