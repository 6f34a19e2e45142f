import CLibWebSockets
import FoundationEssentials
import Glibc
import Synchronization
import SynchronizationSupport

extension ClientTransport {
    /// The socket can take more (`LWS_CALLBACK_CLIENT_WRITEABLE`).
    ///
    /// Writes pings first, then queued messages up to ``ClientLoop/writeBudget`` bytes
    /// (taking them from the shared queue in batches, one lock per batch), then the close
    /// frame once nothing is left. Messages longer than ``ClientLoop/fragmentSize`` go out
    /// as fragments through the loop's one write buffer, so memory stays bounded however
    /// large the message. Asks to be called again while anything remains.
    ///
    /// lws corrupts the stream if `lws_write` is called again while it still holds part
    /// of an earlier frame (the new frame loses its header) or is still draining a
    /// compressed message (the new message becomes its continuation). lws calls this
    /// callback only once both are drained, so the first write is always safe; another
    /// write follows only while nothing is buffered and no large compressed message may be
    /// draining. The close frame is only sent at the start of a pass for the same reason.
    ///
    /// With `direct`, it runs outside any callback (see ``writeDirectly(_:loop:)``): it
    /// then never sends the close frame (only a callback's -1 makes lws close), asking for
    /// the callback instead.
    /// lws_write failed: the socket is going, by this side's decision (so not reported as
    /// the peer breaking the protocol when it closes).
    private func writeFailed() -> Int32 {
        failing = true
        return -1
    }

    func writeable(_ connection: ClientConnection, loop: ClientLoop, direct: Bool = false) -> Int32 {
        guard let wsi, !failing else { return failing ? -1 : 0 }
        var payloadWritten = 0
        defer { if payloadWritten > 0 { connection.bytesWritten.add(payloadWritten, ordering: .relaxed) } }
        var wrote = false
        if keepaliveDue, pingInFlight == nil {
            keepaliveDue = false
            keepaliveCounter += 1
            guard writePing(tag: .keepalive, id: keepaliveCounter, loop: loop) else { return writeFailed() }
            wrote = true
        }
        var budget = ClientLoop.writeBudget
        var moreQueued = false
        var mustYield = false
        while budget > 0 {
            if wrote, mustYield || lws_partial_buffered(wsi) != 0 { break }
            if inProgress == nil {
                if writing.isEmpty {
                    // The batch's arrays are reused from pass to pass: no allocation per write.
                    var batch = ConnectionStateMachine.WriteBatch()
                    swap(&batch, &spareBatch)
                    defer {
                        batch.removeAll()
                        swap(&batch, &spareBatch)
                    }
                    let mayPing = pingInFlight == nil
                    moreQueued = connection.machine.withLock { machine in
                        machine.takeWrites(budget: budget, into: &batch, mayPing: mayPing, now: .now)
                        return machine.hasPendingWrites(mayPing: false)
                    }
                    for sender in batch.admitted { sender.resume() }
                    for id in batch.pings {
                        guard writePing(tag: .user, id: id, loop: loop) else { return writeFailed() }
                        wrote = true
                    }
                    writing.append(contentsOf: batch.messages)
                    if let close = batch.close { closeToSend = close }
                    if writing.isEmpty { break }
                }
                inProgress = OutgoingMessage(message: writing.removeFirst())
            }
            guard let written = writeNextFragment(loop: loop) else { return writeFailed() }
            wrote = true
            budget -= written
            payloadWritten += written
            // Compressed fragments are small enough that lws never drains (see
            // `ClientLoop.compressedFragmentSize`); without the 64 KiB deflate buffer it would.
            if compressionActive, !deflateBufferRaised { mustYield = true }
        }
        if !wrote, inProgress == nil, writing.isEmpty, !moreQueued, let close = closeToSend {
            if direct {
                requestWritable(wsi)
                return 0
            }
            closeToSend = nil
            sendClose(wsi, code: close.code, reason: close.reason)
            return -1
        }
        if inProgress != nil || !writing.isEmpty || moreQueued || closeToSend != nil {
            requestWritable(wsi)
        }
        return 0
    }

    /// Asks lws for a `WRITEABLE` callback (once; later requests ride the same one).
    func requestWritable(_ wsi: OpaquePointer) {
        guard !writableRequested else { return }
        writableRequested = true
        lws_callback_on_writable(wsi)
    }

    /// Whether queued messages may be written right now, from posted work, instead of on
    /// the next poll pass: lws holds nothing unsent, no callback is pending (so nothing
    /// else waits its turn), no keep-alive ping or close is due, and permessage-deflate
    /// (if active) cannot be draining.
    func mayWriteDirectly(_ wsi: OpaquePointer) -> Bool {
        !writableRequested && !failing && !keepaliveDue && closeToSend == nil
            && (!compressionActive || deflateBufferRaised)
            && lws_partial_buffered(wsi) == 0
    }

    /// Writes what is queued without waiting for a poll pass: saves a poll round trip per
    /// send when the socket has room (it almost always has). A failed write marks the
    /// connection failing and asks for the callback, whose -1 then makes lws close it.
    func writeDirectly(_ connection: ClientConnection, loop: ClientLoop) {
        guard let wsi else { return }
        if writeable(connection, loop: loop, direct: true) < 0 {
            failing = true
            requestWritable(wsi)
        }
    }


    /// Writes the next fragment of ``inProgress``; returns the payload bytes written, or
    /// `nil` when lws failed (the connection is then closing).
    private func writeNextFragment(loop: ClientLoop) -> Int? {
        guard let wsi, var outgoing = inProgress else { return 0 }
        let payload = loop.writeBuffer + loop.writeHeadroom
        let total = outgoing.message.byteCount
        let start = outgoing.offset
        let count = min(compressionActive ? ClientLoop.compressedFragmentSize : ClientLoop.fragmentSize, total - start)
        let isBinary: Bool
        switch outgoing.message {
        case .text(var string):
            isBinary = false
            string.withUTF8 { bytes in
                if count > 0 { payload.copyMemory(from: bytes.baseAddress! + start, byteCount: count) }
            }
        case .binary(let data):
            isBinary = true
            data.withUnsafeBytes { bytes in
                if count > 0 { payload.copyMemory(from: bytes.baseAddress! + start, byteCount: count) }
            }
        }
        let isFirst = start == 0
        let isLast = start + count == total
        var flags: UInt32
        if isFirst {
            flags = isBinary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue
        } else {
            flags = LWS_WRITE_CONTINUATION.rawValue
        }
        if !isLast { flags |= LWS_WRITE_NO_FIN.rawValue }
        let result = wss_write(wsi, payload.assumingMemoryBound(to: UInt8.self), count, flags)
        guard result >= 0 else { return nil }
        outgoing.offset += count
        inProgress = isLast ? nil : outgoing
        return max(count, 1)
    }

    /// Writes a ping whose payload is a tag byte and an 8-byte id, and arms its deadline.
    private func writePing(tag: PingTag, id: UInt64, loop: ClientLoop) -> Bool {
        guard let wsi else { return false }
        let payload = loop.writeBuffer + loop.writeHeadroom
        payload.storeBytes(of: tag.rawValue, as: UInt8.self)
        payload.storeBytes(of: id.bigEndian, toByteOffset: 1, as: UInt64.self)
        guard wss_write(wsi, payload.assumingMemoryBound(to: UInt8.self), 9, LWS_WRITE_PING.rawValue) >= 0 else {
            return false
        }
        pingWritten(tag: tag, id: id)
        return true
    }
}
