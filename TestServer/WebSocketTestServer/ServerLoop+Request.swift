import CLibWebSockets
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// Reading the request: headers (standard and custom) and query parameters.
extension ServerLoop {
    func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    func queryParameters(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        var index: Int32 = 0
        while lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
            let fragment = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if let equals = fragment.firstIndex(of: "=") {
                result[String(fragment[..<equals])] = String(fragment[fragment.index(after: equals)...])
            } else if !fragment.isEmpty {
                result[fragment] = ""
            }
            index += 1
        }
        return result
    }

    /// Every standard request header lws parsed, plus the custom headers named in
    /// `?custom=a,b` and a few common ones (lws cannot list unknown headers).
    func requestHeaders(_ wsi: OpaquePointer, extra: String?, names: [String] = []) -> [String: String] {
        var headers: [String: String] = [:]
        var token: UInt32 = 0
        while token < WSI_TOKEN_COUNT.rawValue {
            let index = lws_token_indexes(rawValue: token)
            if let namePointer = lws_token_to_string(index),
               let value = header(wsi, index) {
                var name = String(cString: namePointer)
                if name.hasSuffix(":") { name.removeLast() }
                // Skip lws's pseudo-headers for the request line ("get ", "http/1.1 ", "uri-args").
                if !name.isEmpty, !name.contains(" "), name != "uri-args" { headers[name] = value }
            }
            token += 1
        }
        var custom = [
            "x-api-key", "x-request-id", "x-test", "x-client", "x-trace-id", "traceparent", "tracestate",
            "x-auth-token", "x-token", "x-session-id", "x-client-id", "x-correlation-id", "x-forwarded-for",
            "x-app-version", "x-device-id", "baggage",
        ] + names
        if let extra { custom += extra.split(separator: ",").map { $0.lowercased() } }
        for name in custom {
            var buffer = [CChar](repeating: 0, count: 4096)
            let length = wss_custom_header(wsi, name + ":", &buffer, Int32(buffer.count))
            if length >= 0 {
                headers[name] = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
        }
        return headers
    }
}
