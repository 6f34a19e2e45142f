import CLibWebSockets
import Glibc

/// A resumable TLS session (`SSL_SESSION`) from ``TLSSession/ticket()``, for
/// ``TLSSession/init(context:host:verifyHost:resuming:)``. Only offer it to the same host
/// and port, with a session from the same ``TLSClientContext``.
// @unchecked Sendable: an SSL_SESSION is reference-counted by OpenSSL with atomic counts and
// is immutable once handed out by SSL_get1_session; this object only holds one reference.
final class TLSSessionTicket: @unchecked Sendable {
    /// The `SSL_SESSION *`; this object owns one reference.
    let session: OpaquePointer

    /// Takes over the reference `session` carries.
    init(owning session: OpaquePointer) {
        self.session = session
    }

    deinit {
        SSL_SESSION_free(session)
    }
}
