import CLibWebSockets
import LibWebSocketsLoop
import Glibc

/// A client's libwebsockets raw socket (adopted, no ws role): the only lws calls a
/// connection makes. This side creates and connects the socket (``SocketConnector``);
/// libwebsockets polls it, reads it (handing the bytes over in `LWS_CALLBACK_RAW_RX`),
/// pauses reading, and runs its timer; writes go straight to the descriptor with `send`,
/// so nothing is copied into lws's buffers.
///
/// Loop thread only (lws is not thread-safe).
// @unchecked: a handle to an lws socket, used on its loop's thread only (the descriptor
// number alone reaches tasks, through the write side's lock).
struct RawSocket: @unchecked Sendable {
    let wsi: OpaquePointer

    /// What lws reports about a raw client socket, in the transport's words.
    enum Event {
        /// Bytes arrived (`LWS_CALLBACK_RAW_RX`); valid during the call only.
        case received(UnsafeRawBufferPointer)
        /// The socket can take more (`LWS_CALLBACK_RAW_WRITEABLE`).
        case writable
        /// The socket closed (`LWS_CALLBACK_RAW_CLOSE`).
        case closed
        /// The socket's timer fired (`LWS_CALLBACK_TIMER`).
        case timer
        /// lws is freeing the socket; always the last event (`LWS_CALLBACK_WSI_DESTROY`).
        case destroyed

        /// The event for an lws callback, or `nil` for one the transport does not handle.
        init?(reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) {
            switch reason {
            case LWS_CALLBACK_RAW_RX: self = .received(UnsafeRawBufferPointer(start: length > 0 ? input : nil, count: length))
            case LWS_CALLBACK_RAW_WRITEABLE: self = .writable
            case LWS_CALLBACK_RAW_CLOSE: self = .closed
            case LWS_CALLBACK_TIMER: self = .timer
            case LWS_CALLBACK_WSI_DESTROY: self = .destroyed
            default: return nil
            }
        }
    }

    /// Hands `descriptor` (a socket this side created and started connecting, see
    /// ``SocketConnector``) to lws as a raw socket of `vhost`. `nil` when lws refused it
    /// (it has closed the descriptor then, and no callback follows).
    ///
    /// The caller disables reading while a connect is in progress (``setReading(_:)``): it
    /// is watched for writability only, so a failed connect ends in a hang-up with its
    /// error still on the socket (a read would consume it), and
    /// ``SocketConnector/pendingError(_:)`` can say what went wrong.
    static func adopt(
        descriptor: Int32, vhost: OpaquePointer, protocolName: String, opaque: UnsafeMutableRawPointer
    ) -> RawSocket? {
        var description = lws_adopt_desc_t()
        description.vh = vhost
        description.type = LWS_ADOPT_SOCKET
        description.fd.sockfd = descriptor
        description.opaque = opaque
        let wsi: OpaquePointer? = protocolName.withCString { name in
            description.vh_prot_name = name
            return lws_adopt_descriptor_vhost_via_info(&description)
        }
        return wsi.map(RawSocket.init(wsi:))
    }

    enum SendOutcome {
        /// Every byte went out.
        case sent
        /// The kernel took `count` bytes (maybe 0); wait for writability for the rest.
        case partial(Int)
        case failed(errno: Int32)
    }

    /// Writes as much of `bytes` as the kernel takes now, without blocking.
    func send(_ bytes: UnsafeRawBufferPointer) -> SendOutcome {
        Self.send(bytes, to: lws_get_socket_fd(wsi))
    }

    /// Writes as much of `bytes` to `descriptor` as the kernel takes now, without blocking
    /// (also used by tasks writing directly, ``DirectWriter``, which hold the descriptor).
    static func send(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> SendOutcome {
        guard descriptor >= 0 else { return .failed(errno: EBADF) }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset,
                                     Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if written > 0 {
                offset += written
                continue
            }
            if written < 0, errno == EINTR { continue }
            if written < 0, errno == EAGAIN || errno == EWOULDBLOCK { return .partial(offset) }
            return .failed(errno: written == 0 ? EPIPE : errno)
        }
        return .sent
    }

    /// How many bytes of the outgoing stream the peer's TCP has acknowledged
    /// (`TCP_INFO`'s `tcpi_bytes_acked`, less the one its SYN counts for), or `nil` when
    /// `descriptor` is not a TCP socket (a Unix domain socket). Still readable after a reset,
    /// until the descriptor is closed. Linux 4.2 and later; glibc's `tcp_info` does not name
    /// the field, so it is read at its fixed offset in the kernel's structure.
    static func acknowledgedByteCount(of descriptor: Int32) -> Int? {
        guard descriptor >= 0 else { return nil }
        var info = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0),
                    UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0),
                    UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        var length = socklen_t(MemoryLayout.size(ofValue: info))
        let result = withUnsafeMutableBytes(of: &info) {
            getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length)
        }
        guard result == 0, Int(length) >= bytesAckedOffset + 8 else { return nil }
        let acknowledged = withUnsafeBytes(of: &info) { $0.loadUnaligned(fromByteOffset: bytesAckedOffset, as: UInt64.self) }
        return max(0, Int(truncatingIfNeeded: acknowledged) - 1)
    }

    /// `offsetof(struct tcp_info, tcpi_bytes_acked)` in `<linux/tcp.h>`, a kernel ABI.
    private static let bytesAckedOffset = 120

    /// The socket's descriptor (-1 once lws has closed it).
    var descriptor: Int32 { lws_get_socket_fd(wsi) }

    /// Asks for one `LWS_CALLBACK_RAW_WRITEABLE` when the socket can take more.
    func requestWritable() {
        lws_callback_on_writable(wsi)
    }

    /// Stops (`false`) or resumes (`true`) reading from the socket.
    func setReading(_ enabled: Bool) {
        lws_rx_flow_control(wsi, enabled ? 1 : 0)
    }

    /// Arms the one timer of the socket `delay` from now; `nil` disarms it
    /// (``EventLoopThread/setTimer(of:after:)``: on the client's libev loops, a heap of
    /// deadlines the loop keeps itself).
    func setTimer(_ delay: Duration?) {
        EventLoopThread.setTimer(of: wsi, after: delay)
    }

    /// What waits in the socket, looked at without reading or blocking.
    enum PendingInput {
        /// Bytes from the peer not read yet.
        case unread
        /// Nothing: the peer has neither sent more nor closed.
        case nothingYet
        /// The peer closed (EOF), the socket failed, or there is none.
        case endOrError
    }

    /// The error the socket recorded (`SO_ERROR`, e.g. "connection refused" for a connect
    /// in progress, "connection reset by peer" for an open socket) in words, or `nil` for
    /// none. Reading it clears it.
    func pendingError() -> String? {
        let descriptor = lws_get_socket_fd(wsi)
        guard descriptor >= 0 else { return nil }
        return SocketConnector.pendingError(descriptor)
    }

    func peekInput() -> PendingInput {
        let descriptor = lws_get_socket_fd(wsi)
        guard descriptor >= 0 else { return .endOrError }
        var byte: UInt8 = 0
        let peeked = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if peeked > 0 { return .unread }
        return peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .nothingYet : .endOrError
    }
}
