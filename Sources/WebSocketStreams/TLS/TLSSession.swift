import CLibWebSockets
import Glibc

/// One TLS client connection, run by OpenSSL over two memory BIOs instead of a socket.
///
/// The caller owns the socket and moves bytes both ways:
/// - bytes read from the socket go in with ``receiveCiphertext(_:)``;
/// - after *every* call here (handshake, read, write, close) the caller checks
///   ``pendingCiphertextCount`` and moves that many bytes to the socket with
///   ``takeCiphertext(into:)``. Even ``readPlaintext(into:)`` can produce output (a TLS 1.3
///   key update answer, an alert).
///
/// Drive ``continueHandshake()`` until it returns ``HandshakeStep/done``, then use
/// ``readPlaintext(into:)`` and ``writePlaintext(_:)``; ``close()`` queues close_notify.
///
/// Used by one thread at a time: the event-loop thread that created it, and, while the
/// connection lets tasks write directly, a task holding the connection's write side
/// (`ClientConnection.writeSide`), under which the loop then makes its own calls too
/// (`WriteSide.withTLSSession(_:stopsDirectWrites:)`). OpenSSL's error queue is per thread, and every
/// method clears it before and after its work, so failures reported here never mix with
/// another library's errors on that thread.
// @unchecked: not thread-safe itself; the confinement above (loop thread, or the write-side
// lock while direct writes are open) is what protects it.
final class TLSSession: @unchecked Sendable {
    /// Where the opening handshake stands after ``continueHandshake()``.
    enum HandshakeStep {
        /// The handshake finished; application data can flow.
        case done
        /// OpenSSL needs more bytes from the server (flush ``pendingCiphertextCount`` first).
        case wantsMoreInput
        /// The handshake failed; the reason is a ``WebSocketError/tlsFailure(_:)``. An alert
        /// for the server may be pending in ``pendingCiphertextCount``.
        case failed(WebSocketError)
    }

    /// What ``readPlaintext(into:)`` produced.
    enum ReadOutcome {
        /// This many decrypted bytes (at least 1) were written to the start of the buffer.
        case bytes(Int)
        /// No complete record is buffered; feed more ciphertext first.
        case wantsMoreInput
        /// The server ended the TLS session cleanly (close_notify).
        case closedByPeer
        /// The session failed (a corrupt record, a fatal alert); OpenSSL's reason.
        case failed(String)
    }

    /// Keeps the `SSL_CTX` configuration (trust, ALPN) this session was made from alive.
    private let context: TLSClientContext
    /// The `SSL *`; owns both BIOs.
    let ssl: OpaquePointer
    /// The memory BIO OpenSSL reads the server's ciphertext from.
    private let readBIO: OpaquePointer
    /// The memory BIO OpenSSL writes ciphertext for the server into.
    private let writeBIO: OpaquePointer
    /// The host the session was made for, as given (used in failure messages).
    let host: String
    /// Whether ``close()`` already ran `SSL_shutdown`.
    private var didShutdown = false

    /// Creates a client session for `host` (a DNS name or an IP literal without brackets,
    /// e.g. `example.org`, `127.0.0.1`, `::1`).
    ///
    /// - Parameters:
    ///   - context: the shared context (trust and client certificate).
    ///   - host: sent as SNI unless it is an IP literal (SNI must not carry addresses).
    ///   - verifyHost: whether the certificate must name `host` (a DNS name: subject
    ///     alternative names with whole-label wildcards only; an IP literal: an IP address
    ///     SAN). Only enforced when the context verifies peers at all.
    ///   - resuming: a ticket from an earlier session with the same host, port and
    ///     context, to resume it (abbreviated handshake); silently ignored if unusable.
    /// - Throws: ``WebSocketError/tlsFailure(_:)`` when OpenSSL cannot make the session or
    ///   refuses `host` as a server name.
    init(context: TLSClientContext, host: String, verifyHost: Bool, resuming: TLSSessionTicket? = nil) throws(WebSocketError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            throw .tlsFailure("OpenSSL could not create a TLS session: \(TLSClientContext.takeErrorReason() ?? "out of memory")")
        }
        guard let readBIO = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .tlsFailure("OpenSSL could not create a memory BIO")
        }
        guard let writeBIO = BIO_new(BIO_s_mem()) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            throw .tlsFailure("OpenSSL could not create a memory BIO")
        }
        // BIO_set_mem_eof_return(readBIO, -1): an empty read BIO means "retry later", not EOF.
        _ = BIO_ctrl(readBIO, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, readBIO, writeBIO)  // ssl owns both BIOs from here on
        SSL_set_connect_state(ssl)
        do throws(WebSocketError) {
            try Self.configure(ssl, host: host, verifyHost: verifyHost)
        } catch {
            SSL_free(ssl)
            throw error
        }
        if let resuming, SSL_set_session(ssl, resuming.session) != 1 {
            ERR_clear_error()  // an unusable ticket only means a full handshake
        }
        self.context = context
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.host = host
    }

    deinit {
        SSL_free(ssl)
    }

    /// Sets SNI and the host name check.
    private static func configure(_ ssl: OpaquePointer, host: String, verifyHost: Bool) throws(WebSocketError) {
        // OpenSSL reads an empty name as "check no name" and stops at a NUL byte.
        guard !host.isEmpty, !host.utf8.contains(0) else {
            throw .tlsFailure("'\(host)' cannot be used as the TLS server name")
        }
        let isIPLiteral = Self.isIPLiteral(host)
        if !isIPLiteral {
            // SSL_set_tlsext_host_name is a macro over SSL_ctrl; OpenSSL copies the name.
            let accepted = host.withCString { name in
                SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: name))
            }
            guard accepted == 1 else {
                throw .tlsFailure("'\(host)' cannot be sent as the TLS server name: \(TLSClientContext.takeErrorReason() ?? "unknown reason")")
            }
        }
        guard verifyHost else { return }
        let accepted: Int32
        if isIPLiteral {
            accepted = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            accepted = SSL_set1_host(ssl, host)
        }
        guard accepted == 1 else {
            throw .tlsFailure("cannot check server certificates against '\(host)': \(TLSClientContext.takeErrorReason() ?? "unknown reason")")
        }
    }

    /// Appends ciphertext read from the socket to what OpenSSL will read next. All of it is
    /// kept (a memory BIO grows as needed).
    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard var next = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let chunk = Int32(clamping: remaining)
            let written = BIO_write(readBIO, next, chunk)
            precondition(written > 0, "a memory BIO refused \(chunk) bytes (out of memory)")
            next += Int(written)
            remaining -= Int(written)
        }
    }

    /// Advances the opening handshake with whatever ciphertext has been received.
    /// Call it first with nothing received (it produces the ClientHello), then after each
    /// ``receiveCiphertext(_:)``, flushing ``pendingCiphertextCount`` every time. Returns
    /// ``HandshakeStep/done`` again if called once the handshake is over.
    func continueHandshake() -> HandshakeStep {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            // WANT_WRITE cannot happen with a memory BIO; treating it alike keeps the loop simple.
            return .wantsMoreInput
        default:
            let failure = handshakeFailureReason(sslError: error)
            ERR_clear_error()
            return .failed(.tlsFailure(failure))
        }
    }

    /// Why the handshake failed: the certificate check's verdict when that is what failed,
    /// else the oldest error in OpenSSL's queue.
    private func handshakeFailureReason(sslError: Int32) -> String {
        let verifiesPeer = SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER != 0
        // OpenSSL only records the server's certificate once it passed verification, but the
        // chain it checked is kept either way; without either, no verdict exists yet.
        let receivedCertificate = SSL_get_peer_cert_chain(ssl) != nil || SSL_get0_peer_certificate(ssl) != nil
        let verification = SSL_get_verify_result(ssl)
        if verifiesPeer, receivedCertificate, verification != Int(X509_V_OK) {
            return Self.describeVerificationFailure(verification, host: host)
        }
        // A plaintext answer (an HTTP server) read as a TLS record header.
        let notTLS = ERR_GET_REASON(ERR_peek_error()) == SSL_R_WRONG_VERSION_NUMBER
        let reason = TLSClientContext.takeErrorReason()
            ?? (sslError == SSL_ERROR_SYSCALL ? "the connection ended unexpectedly" : "OpenSSL error \(sslError)")
        if notTLS {
            return "the server at \(host) does not speak TLS on this port (try ws://): \(reason)"
        }
        return "the TLS handshake with \(host) failed: \(reason)"
    }

    /// Decrypts into `buffer` (which must not be empty) from what has been received.
    /// Call only after the handshake is done. Afterwards flush ``pendingCiphertextCount``.
    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) -> ReadOutcome {
        precondition(!buffer.isEmpty, "readPlaintext needs room for at least one byte")
        ERR_clear_error()
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if result == 1 { return .bytes(count) }
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantsMoreInput
        case SSL_ERROR_ZERO_RETURN:
            return .closedByPeer
        default:
            let reason = TLSClientContext.takeErrorReason()
                ?? (error == SSL_ERROR_SYSCALL ? "the TLS stream ended unexpectedly" : "OpenSSL error \(error)")
            ERR_clear_error()
            return .failed(reason)
        }
    }

    /// Whether decrypted bytes wait inside OpenSSL (a record only partly read), so
    /// ``readPlaintext(into:)`` will return data without new input.
    var hasBufferedPlaintext: Bool { SSL_pending(ssl) > 0 }

    /// Whether OpenSSL holds bytes of a record it has not finished (or finished and not
    /// handed out), or ciphertext waits in the read BIO: at the end of the stream, a
    /// truncated record.
    /// (Decrypted bytes waiting to be read are not that: they are a whole record.)
    var holdsUnfinishedInput: Bool {
        BIO_ctrl_pending(readBIO) > 0 || (SSL_has_pending(ssl) == 1 && SSL_pending(ssl) == 0)
    }

    /// Whether received ciphertext waits in the read BIO, not yet looked at by OpenSSL.
    var hasUnprocessedCiphertext: Bool { BIO_ctrl_pending(readBIO) > 0 }

    /// Encrypts all of `bytes` into the write BIO (as many records as needed); flush
    /// ``pendingCiphertextCount`` afterwards. Call only after the handshake is done.
    /// Returns false when the session has failed or was shut down; nothing was queued then.
    func writePlaintext(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        ERR_clear_error()
        var written = 0
        let result = SSL_write_ex(ssl, base, bytes.count, &written)
        ERR_clear_error()
        return result == 1 && written == bytes.count
    }

    /// How many ciphertext bytes wait to be sent to the server.
    var pendingCiphertextCount: Int { Int(BIO_ctrl_pending(writeBIO)) }

    /// Moves up to `buffer.count` waiting ciphertext bytes into `buffer`; returns how many.
    func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        var count = 0
        guard BIO_read_ex(writeBIO, base, buffer.count, &count) == 1 else { return 0 }
        return count
    }

    /// Moves all waiting ciphertext out (a convenience for tests and small writes).
    func takeAllCiphertext() -> [UInt8] {
        let count = pendingCiphertextCount
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = takeCiphertext(into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Queues close_notify (`SSL_shutdown`) for the caller to flush; later calls do nothing.
    /// Does not wait for the server's close_notify. After this, writes fail.
    func close() {
        guard !didShutdown else { return }
        didShutdown = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The protocol the server chose through ALPN (`http/1.1`), or nil if it chose none.
    var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Whether the handshake resumed the session of the ticket given to `init`.
    var isResumed: Bool { SSL_session_reused(ssl) == 1 }

    /// A ticket for resuming this session on a later connection to the same host and port,
    /// or nil when the server has not granted a resumable one (yet). With TLS 1.3 the
    /// server sends tickets after the handshake, so ask once some application data has
    /// been read. Each call returns the newest ticket.
    func ticket() -> TLSSessionTicket? {
        guard let session = SSL_get1_session(ssl) else { return nil }
        guard SSL_SESSION_is_resumable(session) == 1 else {
            SSL_SESSION_free(session)
            return nil
        }
        return TLSSessionTicket(owning: session)
    }
}
