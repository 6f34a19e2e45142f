import CLibWebSockets
import Glibc

extension ServerConnection {
    /// Counts what the client sent that the server is about to discard by dropping the
    /// connection: shuts the socket down both ways, reads it dry (through lws's TLS session
    /// over TLS, so every record the server could decrypt is read), decodes the client's
    /// whole messages in it after the one being received, and records them in
    /// ``TestServer/ConnectionRecord/messagesDiscardedAtDrop``. The caller then closes the
    /// socket as before, without a close frame.
    ///
    /// Shutting the socket down first makes the count exact: a socket shut down for reading
    /// and writing answers any later data with a reset instead of acknowledging it, so every
    /// byte the client's TCP saw acknowledged was either read by lws before or is read here.
    /// What was queued before the shutdown stays readable.
    func discardInputAtDrop(_ wsi: OpaquePointer) {
        let descriptor = lws_get_socket_fd(wsi)
        guard descriptor >= 0 else { return }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        let bytes = Self.readDry(descriptor, tls: lws_get_ssl(wsi))
        let remaining = Int(lws_remaining_packet_payload(wsi))
        var inProgress: DiscardedInput.InProgress?
        if !partial.isEmpty || remaining > 0 {
            let payload = partial.isEmpty ? [] : Array(partial[Self.headroom...])
            let binary = partial.isEmpty ? lws_frame_is_binary(wsi) != 0 : partialIsBinary
            inProgress = .init(binary: binary, payload: payload, remainingInFrame: remaining)
        }
        partial = []
        let input = DiscardedInput(decoding: bytes, continuing: inProgress)
        let texts = recordTexts
            ? input.messages.compactMap { message in
                message.binary ? nil : message.payload.map { String(decoding: $0, as: UTF8.self) }
            }
            : []
        recorder.change(id) { record in
            record.messagesDiscardedAtDrop += input.messages.count
            record.textsDiscardedAtDrop += texts
            record.bytesDiscardedAtDrop += bytes.count
            if input.endsInsideMessage { record.partialMessageDiscardedAtDrop = true }
        }
    }

    /// Everything `descriptor` holds to read now, without waiting; over TLS, decrypted by
    /// `tls` (lws's session), until it would wait for more or the stream ends.
    private static func readDry(_ descriptor: Int32, tls: OpaquePointer?) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer -> Int in
                guard let tls else { return recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) }
                ERR_clear_error()
                return Int(SSL_read(tls, buffer.baseAddress, Int32(buffer.count)))
            }
            if count > 0 {
                bytes += chunk[..<count]
            } else if count < 0, tls == nil, errno == EINTR {
                continue
            } else {
                break
            }
        }
        // Leave no error of ours on the thread's queue for lws's next TLS call to find.
        if tls != nil { ERR_clear_error() }
        return bytes
    }
}
