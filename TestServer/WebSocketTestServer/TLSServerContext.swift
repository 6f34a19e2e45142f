import CLibWebSockets

/// The OpenSSL server context (`SSL_CTX`) of the raw TLS listener: the certificate and key
/// a TLS ``TestServer`` generated for libwebsockets' listener, loaded once, so clients
/// trust both listeners through the same CA file.
///
/// Sessions are cached (and TLS 1.3 tickets issued) by OpenSSL's defaults, so a client can
/// resume a session on this listener as on the other.
// @unchecked Sendable: the SSL_CTX is only configured in `init`; afterwards connection
// threads only make sessions from it (SSL_new) and use its session cache, which OpenSSL
// guards with the context's own lock.
final class TLSServerContext: @unchecked Sendable {
    /// The `SSL_CTX *`, owned.
    let context: OpaquePointer

    /// Loads the server certificate and key of `certificates`.
    init(certificates: TestCertificates) throws(TestServerError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .couldNotListen("OpenSSL could not create a server context")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificates.serverCertificateFile) == 1,
              SSL_CTX_use_PrivateKey_file(context, certificates.serverKeyFile, SSL_FILETYPE_PEM) == 1,
              SSL_CTX_check_private_key(context) == 1
        else {
            let reason = Self.takeErrorReason()
            SSL_CTX_free(context)
            throw .couldNotListen("the raw TLS listener could not load \(certificates.serverCertificateFile): \(reason)")
        }
        self.context = context
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// The oldest error in this thread's OpenSSL queue, as text; the queue is cleared.
    static func takeErrorReason() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown reason" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
