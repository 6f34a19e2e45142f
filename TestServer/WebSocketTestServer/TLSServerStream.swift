import CLibWebSockets
import Glibc

/// One server-side TLS connection on a socket, for a raw TLS listener's connection thread.
/// Calls block, waiting with `poll`, so shutting the socket down (as ``RawTLSListener``
/// does when it stops) wakes any of them.
///
/// OpenSSL reads ciphertext straight from the socket (a socket BIO) but writes into a
/// memory BIO, so the code above decides which encrypted bytes reach the socket: normally
/// all of them (``write(_:)`` and every other call flush), but a route that breaks TLS can
/// take a record with ``encryptedRecord(of:)`` and send what it likes of it with
/// ``sendRaw(_:)``.
///
/// Not `Sendable`: confined to its connection's thread (OpenSSL's error queue is per thread).
final class TLSServerStream {
    /// What ``read(into:until:)`` produced.
    enum ReadResult {
        /// This many decrypted bytes (at least 1) are at the start of the buffer.
        case bytes(Int)
        /// The deadline passed first.
        case timedOut
        /// The client closed TLS or TCP, or the connection failed.
        case ended
    }

    /// The connection's socket (non-blocking); the listener owns and closes it.
    let socket: Int32
    /// The `SSL *`; owns both BIOs.
    private let ssl: OpaquePointer
    /// The memory BIO OpenSSL writes ciphertext for the client into.
    private let writeBIO: OpaquePointer
    /// How long a send may wait for the client to read before the connection counts as dead.
    private static let sendStallLimit: Duration = .seconds(10)

    /// A server session on `socket`, made non-blocking here; nil if OpenSSL cannot make one.
    init?(context: TLSServerContext, socket: Int32) {
        ERR_clear_error()
        guard fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK) == 0,
              let ssl = SSL_new(context.context)
        else { return nil }
        guard let readBIO = BIO_new_socket(socket, BIO_NOCLOSE) else {
            SSL_free(ssl)
            return nil
        }
        guard let writeBIO = BIO_new(BIO_s_mem()) else {
            BIO_free(readBIO)
            SSL_free(ssl)
            return nil
        }
        SSL_set_bio(ssl, readBIO, writeBIO)  // ssl owns both BIOs from here on
        SSL_set_accept_state(ssl)
        self.socket = socket
        self.ssl = ssl
        self.writeBIO = writeBIO
    }

    deinit {
        SSL_free(ssl)
    }

    /// Whether the client resumed an earlier session (valid once the handshake is done).
    var isResumed: Bool { SSL_session_reused(ssl) == 1 }

    /// Runs the TLS handshake, each step's output sent before waiting for the client's
    /// next flight; false when it fails or `deadline` passes.
    func handshake(until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            ERR_clear_error()
            let result = SSL_do_handshake(ssl)
            let error = result == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, result)
            // Send what this step produced (a flight, or an alert) before anything else.
            guard flush() else { return false }
            if result == 1 { return true }
            guard error == SSL_ERROR_WANT_READ, wait(for: POLLIN, until: deadline) else {
                ERR_clear_error()
                return false
            }
        }
    }

    /// Decrypts what the client sent into `buffer` (not empty), waiting for it until
    /// `deadline` (forever when nil).
    func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: ContinuousClock.Instant?) -> ReadResult {
        while true {
            ERR_clear_error()
            var count = 0
            let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
            let error = result == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, result)
            // Reading may produce output too (an answer to a key update, an alert).
            guard flush() else { return .ended }
            if result == 1 { return .bytes(count) }
            guard error == SSL_ERROR_WANT_READ else {
                ERR_clear_error()
                return .ended
            }
            if !wait(for: POLLIN, until: deadline) { return .timedOut }
        }
    }

    /// Encrypts `bytes` and sends them; false when the connection failed.
    func write(_ bytes: [UInt8]) -> Bool {
        encrypt(bytes) && flush()
    }

    /// Flushes what waits, then returns the ciphertext of `bytes` (one record for a small
    /// message) without sending it; nil when the session failed.
    func encryptedRecord(of bytes: [UInt8]) -> [UInt8]? {
        guard flush(), encrypt(bytes) else { return nil }
        return takeCiphertext()
    }

    /// Sends close_notify (`SSL_shutdown`) without waiting for the client's.
    func closeNotify() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        _ = flush()
    }

    /// Sends `bytes` as they are, bypassing TLS; false when the connection failed.
    func sendRaw(_ bytes: some Collection<UInt8>) -> Bool {
        if let sent = bytes.withContiguousStorageIfAvailable({ sendAll(UnsafeRawBufferPointer($0)) }) { return sent }
        return Array(bytes).withUnsafeBytes { sendAll($0) }
    }

    /// Ends the sending direction of TCP (a FIN), keeping the receiving one open.
    func shutdownSending() {
        _ = shutdown(socket, Int32(SHUT_WR))
    }

    /// Reads and discards raw bytes until the client ends TCP, the connection fails, or
    /// `deadline` passes: closing a socket with unread bytes would send a reset.
    func drain(until deadline: ContinuousClock.Instant) {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while wait(for: POLLIN, until: deadline) {
            let count = recv(socket, &scratch, scratch.count, 0)
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { return }
        }
    }

    // MARK: - Plumbing

    /// Queues `bytes` as TLS records in the write BIO.
    private func encrypt(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        ERR_clear_error()
        var written = 0
        let result = bytes.withUnsafeBytes { SSL_write_ex(ssl, $0.baseAddress, $0.count, &written) }
        ERR_clear_error()
        return result == 1 && written == bytes.count
    }

    /// Sends all ciphertext waiting in the write BIO.
    private func flush() -> Bool {
        let ciphertext = takeCiphertext()
        return ciphertext.isEmpty || ciphertext.withUnsafeBytes { sendAll($0) }
    }

    /// Takes all ciphertext waiting in the write BIO.
    private func takeCiphertext() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(writeBIO))
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, initialized in
            var count = 0
            initialized = BIO_read_ex(writeBIO, buffer.baseAddress, pending, &count) == 1 ? count : 0
        }
    }

    /// Sends all of `bytes`, waiting while the socket is full.
    private func sendAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let sent = send(socket, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent > 0 {
                offset += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK,
                      wait(for: POLLOUT, until: .now + Self.sendStallLimit) {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Waits until the socket is ready for `events` (or failed, or was shut down: the next
    /// call then says so); false when `deadline` passes first.
    private func wait(for events: Int32, until deadline: ContinuousClock.Instant?) -> Bool {
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let remaining = deadline - .now
                guard remaining > .zero else { return false }
                let (seconds, attoseconds) = remaining.components
                // Rounded up, so a wait never ends just before its deadline and spins.
                timeout = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            }
            var descriptor = pollfd(fd: socket, events: Int16(events), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready > 0 || (ready < 0 && errno != EINTR) { return true }
        }
    }
}
