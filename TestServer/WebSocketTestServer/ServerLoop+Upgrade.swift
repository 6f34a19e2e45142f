import CLibWebSockets
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// Answering the upgrade: which route or handler serves a request, rejections, and the
/// connection each accepted upgrade becomes.
extension ServerLoop {
    func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        let path = header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        let query = queryParameters(wsi)
        if let handler = handler(forPath: path) {
            guard let decide = handler.upgrade else { return 0 }
            let request = TestServer.UpgradeRequest(
                path: path, query: query, headers: requestHeaders(wsi, extra: query["custom"], names: handler.headerNames),
                offeredSubprotocols: offeredSubprotocols(wsi))
            switch decide(request) {
            case .accept:
                return 0
            case .reject(let status, let headers, let body):
                recorder.rejected(path: path, status: status)
                return reject(wsi, status: status, body: body, retryAfter: nil, location: nil, headers: headers)
            }
        }
        let route = ServerRoute(path: path, query: query)
        if case .reject(let status, let body, let retryAfter, let location) = route {
            recorder.rejected(path: path, status: status)
            return reject(wsi, status: status, body: body, retryAfter: retryAfter, location: location)
        }
        guard route.isServedByRawTLSListener else { return 0 }
        if settings.certificates != nil {
            // lws holds the TLS state: raw routes over TLS are the raw TLS listener's.
            let body = "\(path) is served over TLS by the raw TLS listener (TestServer.rawTLSPort)"
            return reject(wsi, status: 501, body: body, retryAfter: nil, location: nil)
        }
        guard route.isRaw else {
            let body = "\(path) is only served by a TLS test server, on its raw TLS listener"
            return reject(wsi, status: 501, body: body, retryAfter: nil, location: nil)
        }
        return takeOver(wsi, route: route, path: path, query: query)
    }

    /// Writes a complete HTTP error response and tells lws the request is handled.
    func reject(
        _ wsi: OpaquePointer, status: Int, body: String, retryAfter: String?, location: String?, headers: [String: String] = [:]
    ) -> Int32 {
        let response = HTTPResponses.rejection(status: status, body: body, retryAfter: retryAfter, location: location, headers: headers)
        var bytes = [UInt8](repeating: 0, count: ServerConnection.headroom) + response
        _ = bytes.withUnsafeMutableBufferPointer { buffer in
            wss_write(wsi, buffer.baseAddress! + ServerConnection.headroom, response.count, LWS_WRITE_HTTP.rawValue)
        }
        return 1
    }

    func answerPlainHTTP(_ wsi: OpaquePointer) -> Int32 {
        _ = reject(wsi, status: 426, body: "this is a WebSocket test server; connect with ws://", retryAfter: nil, location: nil)
        return -1
    }

    func established(_ wsi: OpaquePointer) {
        let path = header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        let query = queryParameters(wsi)
        let handler = handler(forPath: path)
        let route = handler == nil ? ServerRoute(path: path, query: query) : .handler
        let headers = requestHeaders(wsi, extra: query["custom"], names: handler?.headerNames ?? [])
        let offered = header(wsi, WSI_TOKEN_PROTOCOL)
        let selected = offered == nil ? nil : lws_get_protocol(wsi).map { String(cString: $0.pointee.name) }
        let compressed = settings.compression && (headers["sec-websocket-extensions"]?.contains("permessage-deflate") ?? false)
        let resumed = lws_get_ssl(wsi).map { SSL_session_reused($0) == 1 } ?? false
        var peerText = [CChar](repeating: 0, count: 64)
        let peerAddress = lws_get_peer_simple(wsi, &peerText, peerText.count).map { String(cString: $0) }
        let id = recorder.opened { id in
            var record = TestServer.ConnectionRecord(
                id: id, path: path, query: query, headers: headers, subprotocol: selected,
                compressed: compressed, openedAt: .now)
            record.tlsResumed = resumed
            record.peerAddress = peerAddress
            return record
        }
        if compressed {
            // lws's 1 KiB deflate buffers split larger messages over many writable passes, and
            // a small inflate buffer makes lws drain (see `receiveBufferSize`).
            _ = lws_set_extension_option(wsi, "permessage-deflate", "tx_buf_size", "16")
            _ = lws_set_extension_option(wsi, "permessage-deflate", "rx_buf_size", "20")
        }
        let connection = ServerConnection(
            id: id, route: route, recorder: recorder, compressed: compressed, recordTexts: settings.recordTexts)
        connection.wsi = wsi
        attach(connection, to: wsi)
        if let handler, let runner, let thread {
            let link = HandlerLink(id: id, loop: self, thread: thread)
            connection.handler = link
            handlerConnections[id] = connection
            let request = TestServer.UpgradeRequest(
                path: path, query: query, headers: headers, offeredSubprotocols: offeredSubprotocols(wsi))
            runner.start(handler.body, on: TestServer.Connection(link: link, request: request, subprotocol: selected))
            return
        }
        let seen = HandshakeSeen(path: path, subprotocol: selected, compressed: compressed, headers: headers)
        connection.established(wsi, headersJSON: seen.json)
    }

    /// The handler serving `path`, if any.
    func handler(forPath path: String) -> TestServer.Handler? {
        settings.fallbackHandler ?? settings.handlers[path]
    }

    /// The open handler connection `id` and its wsi.
    func handlerConnection(_ id: Int) -> (ServerConnection, OpaquePointer)? {
        guard let connection = handlerConnections[id], let wsi = connection.wsi else { return nil }
        return (connection, wsi)
    }

    /// The subprotocols the client offered, in its order.
    func offeredSubprotocols(_ wsi: OpaquePointer) -> [String] {
        (header(wsi, WSI_TOKEN_PROTOCOL) ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    func handle(
        _ connection: ServerConnection, wsi: OpaquePointer, reason: lws_callback_reasons,
        input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_RECEIVE:
            return connection.receive(wsi, input: input, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            return connection.writeable(wsi, pushBuffer: pushBuffer, pushCapacity: Self.pushCapacity)
        case LWS_CALLBACK_TIMER:
            return connection.timerFired(wsi)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            var code: WebSocketCloseCode?
            var reason = ""
            if let input, length >= 2 {
                let bytes = input.assumingMemoryBound(to: UInt8.self)
                code = WebSocketCloseCode(rawValue: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
                reason = String(decoding: UnsafeBufferPointer(start: bytes + 2, count: length - 2), as: UTF8.self)
            } else {
                code = .noStatusReceived
            }
            recorder.change(connection.id) { record in
                record.closeCodeReceived = code
                record.closeReasonReceived = reason
                record.closeReceivedAt = .now
            }
            connection.handler?.clientClosed(code: code, reason: reason)
        case LWS_CALLBACK_RECEIVE_PONG:
            recorder.change(connection.id) { $0.pongsReceived += 1 }
        case LWS_CALLBACK_CLOSED:
            recorder.change(connection.id) { $0.closedAt = .now }
        case LWS_CALLBACK_WSI_DESTROY:
            recorder.markClosed(connection.id)
            connection.wsi = nil
            detach(wsi, connection)
            handlerConnections[connection.id] = nil
            connection.handler?.ended()
        default:
            break
        }
        return 0
    }
}
