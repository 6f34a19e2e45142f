import CLibWebSockets
import Glibc
import SynchronizationSupport

/// An OpenSSL client context (`SSL_CTX`) configured from a ``WebSocketConfiguration/TLS``:
/// TLS 1.2 or newer, the system's CAs plus ``WebSocketConfiguration/TLS/trustedCAFile``,
/// an optional client certificate, peer verification (unless
/// ``WebSocketConfiguration/TLS/allowUntrustedCertificates``) and ALPN `http/1.1`.
///
/// Building one loads the system CA bundle, which takes tens to hundreds of milliseconds,
/// so contexts are built once per distinct TLS configuration and shared through
/// ``shared(for:)``; each connection then makes a cheap ``TLSSession`` from it.
/// Call ``shared(for:)`` from the caller's task, never from the event-loop thread.
// @unchecked Sendable: the SSL_CTX is fully configured in `init` and never changed afterwards;
// OpenSSL allows creating SSL objects from one SSL_CTX on many threads at once (it locks the
// context's reference count and session cache itself).
final class TLSClientContext: @unchecked Sendable {
    /// The `SSL_CTX *`, owned by this object and freed in `deinit`. Each `SSL` made from it
    /// holds its own reference, so sessions may outlive this object.
    let context: OpaquePointer

    /// The contexts built so far, one per distinct TLS configuration. Only successfully
    /// built contexts are kept; a configuration that failed is tried again next time.
    private static let cache = AnnotatedMutex<[WebSocketConfiguration.TLS: TLSClientContext]>([:])

    /// The newest session ticket per `host:port`, offered by the next connection there:
    /// a reconnect (``ReconnectingWebSocket`` above all) resumes the session, an
    /// abbreviated handshake, instead of a full one. At most ``maxTickets`` are kept.
    private let tickets = AnnotatedMutex<[String: TLSSessionTicket]>([:])
    static let maxTickets = 256

    /// The ticket to offer to `host:port`, if a session with it ended or is open.
    func ticket(forServer server: String) -> TLSSessionTicket? {
        tickets.withLock { $0[server] }
    }

    /// Keeps `ticket` for the next connection to `server` (`host:port`).
    func store(_ ticket: TLSSessionTicket, forServer server: String) {
        tickets.withLock { tickets in
            if tickets[server] == nil, tickets.count >= Self.maxTickets, let any = tickets.keys.first {
                tickets[any] = nil
            }
            tickets[server] = ticket
        }
    }

    /// The context for `tls`, built on first use and cached for the life of the process.
    ///
    /// The context is built outside the lock, so a slow build never blocks callers that
    /// want another configuration; when two callers race for the same configuration, the
    /// first to finish wins and the other's context is discarded. File contents are read
    /// once: a CA file or client certificate changed on disk later is not picked up.
    ///
    /// - Throws: ``WebSocketError/invalidConfiguration(_:)`` when the CA file cannot be
    ///   loaded; ``WebSocketError/tlsFailure(_:)`` when the client certificate or key
    ///   cannot, or OpenSSL cannot make a context.
    static func shared(for tls: WebSocketConfiguration.TLS) throws(WebSocketError) -> TLSClientContext {
        // The verify hook runs after the handshake, outside OpenSSL: it does not shape the
        // context, and a hook made per connect must not build a context per connect.
        var tls = tls
        tls.verifyPeer = nil
        if let cached = cache.withLock({ $0[tls] }) { return cached }
        let built = try TLSClientContext(tls)
        return cache.withLock { contexts in
            if let winner = contexts[tls] { return winner }
            contexts[tls] = built
            return built
        }
    }

    /// Builds a new, uncached context for `tls`; ``shared(for:)`` is what connections use.
    init(_ tls: WebSocketConfiguration.TLS) throws(WebSocketError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw .tlsFailure("OpenSSL could not create a TLS context: \(Self.takeErrorReason() ?? "out of memory")")
        }
        do throws(WebSocketError) {
            try Self.configure(context, for: tls)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        ERR_clear_error()
        self.context = context
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// Applies `tls` to a fresh `SSL_CTX`.
    private static func configure(_ context: OpaquePointer, for tls: WebSocketConfiguration.TLS) throws(WebSocketError) {
        // SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
        guard SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil) == 1 else {
            throw .tlsFailure("OpenSSL refused TLS 1.2 as the minimum version: \(takeErrorReason() ?? "unknown reason")")
        }

        // An idle connection keeps no record buffers (about 34 KiB each, allocated again on
        // the next record): memory per idle wss:// connection is then close to ws://'s.
        // SSL_CTX_set_mode is a macro over SSL_CTX_ctrl.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_MODE, Int(SSL_MODE_RELEASE_BUFFERS), nil)

        // The system's CAs (honouring SSL_CERT_FILE / SSL_CERT_DIR). A missing bundle is not
        // fatal here: trustedCAFile may be all the trust needed, and a connection that cannot
        // be verified fails with a clear "not signed by a trusted CA".
        _ = SSL_CTX_set_default_verify_paths(context)
        ERR_clear_error()

        if let caFile = tls.trustedCAFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw .invalidConfiguration("cannot load the CA file '\(caFile)': \(takeErrorReason() ?? "unknown reason")")
            }
        }

        if let pem = tls.trustedCAPEM {
            guard pem.withCString({ wss_ctx_trust_pem(context, $0, Int32(strlen($0))) }) > 0 else {
                throw .invalidConfiguration(
                    "tls.trustedCAPEM holds no usable certificate: \(takeErrorReason() ?? "expected -----BEGIN CERTIFICATE-----")")
            }
        }

        if tls.clientCertificateFile != nil || tls.clientKeyFile != nil {
            try loadClientCertificate(into: context, certificateFile: tls.clientCertificateFile, keyFile: tls.clientKeyFile)
        }
        if let certificate = tls.clientCertificatePEM, let key = tls.clientKeyPEM {
            try loadClientCertificate(into: context, certificatePEM: certificate, keyPEM: key)
        }

        SSL_CTX_set_verify(context, tls.allowUntrustedCertificates ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nil)

        // ALPN in wire format: a length byte, then the protocol name.
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        let alpnResult = alpn.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count)) }
        guard alpnResult == 0 else {  // this one returns 0 on success
            throw .tlsFailure("OpenSSL refused the ALPN list: \(takeErrorReason() ?? "unknown reason")")
        }

        // Client-side session caching on (the macro SSL_CTX_set_session_cache_mode). Nothing
        // reads OpenSSL's internal store for clients (sessions are resumed explicitly through
        // TLSSession.ticket()), so it is not filled: that would only grow with every connection.
        let cacheMode = Int(SSL_SESS_CACHE_CLIENT) | Int(SSL_SESS_CACHE_NO_INTERNAL_STORE)
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_SESS_CACHE_MODE, cacheMode, nil)
    }

    /// Loads the client certificate chain and its key, and checks that they belong together.
    /// A missing key file means the key is in the certificate file.
    private static func loadClientCertificate(
        into context: OpaquePointer, certificateFile: String?, keyFile: String?
    ) throws(WebSocketError) {
        let prefix = "the client certificate or key could not be loaded"
        guard let certificateFile else {
            throw .tlsFailure("\(prefix): a client key needs a client certificate")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw .tlsFailure("\(prefix): '\(certificateFile)': \(takeErrorReason() ?? "unknown reason")")
        }
        let keyFile = keyFile ?? certificateFile
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw .tlsFailure("\(prefix): '\(keyFile)': \(takeErrorReason() ?? "unknown reason")")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .tlsFailure("\(prefix): the key in '\(keyFile)' does not match the certificate: \(takeErrorReason() ?? "unknown reason")")
        }
    }

    /// Loads the client certificate (and chain) and its key from PEM text, and checks that
    /// they belong together.
    private static func loadClientCertificate(
        into context: OpaquePointer, certificatePEM: String, keyPEM: String
    ) throws(WebSocketError) {
        let prefix = "the client certificate or key could not be loaded"
        guard certificatePEM.withCString({ wss_ctx_use_certificate_pem(context, $0, Int32(strlen($0))) }) == 1 else {
            throw .tlsFailure("\(prefix): tls.clientCertificatePEM: \(takeErrorReason() ?? "not a PEM certificate")")
        }
        guard keyPEM.withCString({ wss_ctx_use_private_key_pem(context, $0, Int32(strlen($0))) }) == 1 else {
            throw .tlsFailure("\(prefix): tls.clientKeyPEM: \(takeErrorReason() ?? "not a PEM private key")")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .tlsFailure("\(prefix): tls.clientKeyPEM does not match the certificate: \(takeErrorReason() ?? "unknown reason")")
        }
    }

    /// The reason of the oldest error in this thread's OpenSSL error queue (e.g.
    /// "certificate verify failed", "No such file or directory"), or nil when the queue is
    /// empty. Empties the queue, so the next OpenSSL call starts clean.
    static func takeErrorReason() -> String? {
        let code = ERR_get_error()
        defer { ERR_clear_error() }
        guard code != 0 else { return nil }
        // OpenSSL 3 packs an errno as ERR_SYSTEM_FLAG | errno (the ERR_SYSTEM_ERROR macro);
        // those have no entry in OpenSSL's reason strings.
        let systemFlag: UInt = 1 << 31
        if code & systemFlag != 0, let text = strerror(Int32(truncatingIfNeeded: code & (systemFlag - 1))) {
            return String(cString: text)
        }
        if let reason = ERR_reason_error_string(code) { return String(cString: reason) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
