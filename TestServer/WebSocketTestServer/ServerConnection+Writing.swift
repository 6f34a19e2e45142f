import CLibWebSockets
import DequeModule
import FoundationEssentials
import Glibc
import LibWebSocketsLoop
import WebSocketStreams

/// Writing: frames queued for the client, written within lws's limits, and `/push`'s
/// generated messages.
extension ServerConnection {
    /// Whether another `lws_write` in this writable pass is safe: lws corrupts the stream
    /// when a frame is written while part of an earlier one is still buffered.
    func canWriteMore(_ wsi: OpaquePointer) -> Bool {
        lws_partial_buffered(wsi) == 0
    }

    /// The largest piece written at once. With compression, 32 KiB keeps lws out of its
    /// "draining" state (see `LoopConnections.compressedFragmentSize` in WebSocketStreams), in
    /// which it would keep reading our buffer after `lws_write` returned.
    var pieceLimit: Int { compressed ? 32 * 1024 : Int.max }

    func enqueue(_ wsi: OpaquePointer, payload: [UInt8], binary: Bool) {
        enqueue(wsi, payload: payload, flags: binary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue)
    }

    func enqueue(_ wsi: OpaquePointer, payload: [UInt8], flags: UInt32) {
        var bytes = [UInt8](repeating: 0, count: Self.headroom)
        bytes.append(contentsOf: payload)
        enqueue(wsi, Frame(bytes: bytes, flags: flags))
    }

    func enqueue(_ wsi: OpaquePointer, _ frame: Frame) {
        outbound.append(frame)
        outboundBytes += frame.payloadCount
        if outboundBytes > Self.outboundHighWatermark { setReading(paused: true, for: .outboundBacklog, wsi) }
        lws_callback_on_writable(wsi)
    }

    func writeable(_ wsi: OpaquePointer, pushBuffer: UnsafeMutableRawPointer, pushCapacity: Int) -> Int32 {
        var budget = Self.writeBudget
        var wrote = false
        if case .push(let count, let size, let binary, let fragment) = route, pushed < count,
           !compressed, fragment == 0, size <= Self.coalescedMessageLimit, pushOffset == 0 {
            while pushed < count, budget > 0, !wrote || canWriteMore(wsi) {
                let used = coalescePushes(into: pushBuffer + Self.headroom, capacity: min(pushCapacity, Self.coalescedBatchBytes),
                                          count: count, size: size, binary: binary)
                let written = wss_write(wsi, (pushBuffer + Self.headroom).assumingMemoryBound(to: UInt8.self),
                                        used, LWS_WRITE_HTTP.rawValue)
                if written < 0 { return -1 }
                wrote = true
                budget -= used
            }
        } else if case .push(let count, let size, let binary, let fragment) = route, pushed < count {
            let payload = pushBuffer + Self.headroom
            // Messages larger than the push buffer go out in buffer-sized fragments.
            let piece = min(fragment > 0 ? fragment : max(size, 1), pieceLimit, pushCapacity)
            while pushed < count, budget > 0, !wrote || canWriteMore(wsi) {
                let length = min(piece, size - pushOffset)
                Self.fillPushPayload(payload, sequence: pushed, binary: binary, range: pushOffset..<(pushOffset + length))
                var flags = pushOffset == 0
                    ? (binary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue)
                    : LWS_WRITE_CONTINUATION.rawValue
                if pushOffset + length < size { flags |= LWS_WRITE_NO_FIN.rawValue }
                if wss_write(wsi, payload.assumingMemoryBound(to: UInt8.self), length, flags) < 0 { return -1 }
                wrote = true
                budget -= max(length, 64)
                pushOffset += length
                if pushOffset >= size {
                    pushOffset = 0
                    pushed += 1
                }
            }
        }
        while budget > 0, !wrote || canWriteMore(wsi) {
            if current == nil {
                guard let next = outbound.popFirst() else { break }
                current = (next, 0)
            }
            guard var (frame, offset) = current else { break }
            // Only the local copy may hold the bytes while lws writes its header into them,
            // or the write below would copy the whole frame first.
            current = nil
            let total = frame.payloadCount
            let length = min(total - offset, pieceLimit)
            let last = offset + length == total
            var flags = offset == 0 ? frame.flags : LWS_WRITE_CONTINUATION.rawValue | (frame.flags & LWS_WRITE_NO_FIN.rawValue)
            if !last { flags |= LWS_WRITE_NO_FIN.rawValue }
            // The bytes before each piece serve as lws's header room (written ones or LWS_PRE).
            let result = frame.bytes.withUnsafeMutableBufferPointer { buffer in
                wss_write(wsi, buffer.baseAddress! + Self.headroom + offset, length, flags)
            }
            if result < 0 { return -1 }
            wrote = true
            budget -= max(length, 64)
            offset += length
            if last {
                outboundBytes -= total
                handler?.wrote(total)
                // lws has taken the frame (what the socket did not, it copied): its buffer
                // can hold the next message.
                if frame.bytes.capacity <= Self.largestReservation, frame.bytes.capacity > spareBuffer.capacity {
                    frame.bytes.removeAll(keepingCapacity: true)
                    spareBuffer = frame.bytes
                }
            } else {
                current = (frame, offset)
            }
        }
        if readingPauses.contains(.outboundBacklog), outboundBytes < Self.outboundHighWatermark / 4 {
            setReading(paused: false, for: .outboundBacklog, wsi)
        }
        if let endingAfterWrites, current == nil, outbound.isEmpty {
            self.endingAfterWrites = nil
            requestEnding(endingAfterWrites, wsi)
        }
        var more = current != nil || !outbound.isEmpty
        if case .push(let count, _, _, _) = route, pushed < count { more = true }
        if more { lws_callback_on_writable(wsi) }
        return 0
    }

    /// Pushed messages up to this size are framed here and written many per `lws_write`
    /// (uncompressed only): one syscall per message made the server, not the client under
    /// test, the bottleneck of push benchmarks.
    static let coalescedMessageLimit = 4096
    /// Bytes of frames gathered into one write.
    static let coalescedBatchBytes = 64 * 1024

    /// Frames as many next pushed messages as fit in `capacity` bytes at `buffer` (at least
    /// one) and returns the bytes used. Server frames are unmasked: FIN and the opcode, the
    /// length (7 or 7+16 bits), then the payload.
    func coalescePushes(into buffer: UnsafeMutableRawPointer, capacity: Int, count: Int, size: Int, binary: Bool) -> Int {
        let headerLength = size < 126 ? 2 : 4
        var used = 0
        while pushed < count, used == 0 || used + headerLength + size <= capacity {
            let frame = buffer + used
            frame.storeBytes(of: binary ? 0x82 : 0x81, as: UInt8.self)
            if size < 126 {
                frame.storeBytes(of: UInt8(size), toByteOffset: 1, as: UInt8.self)
            } else {
                frame.storeBytes(of: 126, toByteOffset: 1, as: UInt8.self)
                frame.storeBytes(of: UInt8(size >> 8), toByteOffset: 2, as: UInt8.self)
                frame.storeBytes(of: UInt8(size & 0xFF), toByteOffset: 3, as: UInt8.self)
            }
            Self.fillPushPayload(frame + headerLength, sequence: pushed, binary: binary, range: 0..<size)
            used += headerLength + size
            pushed += 1
        }
        return used
    }

    /// Writes bytes `range` of pushed message `sequence` to the start of `payload`.
    ///
    /// Binary messages start with the sequence number as 8 big-endian bytes, text ones
    /// with it as 10 decimal digits and a colon; the rest is filler (`a` or `x`). Clients
    /// use the prefix to check order and completeness.
    static func fillPushPayload(_ payload: UnsafeMutableRawPointer, sequence: Int, binary: Bool, range: Range<Int>) {
        let prefix: [UInt8]
        if binary {
            prefix = withUnsafeBytes(of: UInt64(sequence).bigEndian) { Array($0) }
        } else {
            let digits = Array(String(sequence).utf8)
            prefix = Array(repeating: UInt8(ascii: "0"), count: max(0, 10 - digits.count)) + digits + [UInt8(ascii: ":")]
        }
        let filler: Int32 = binary ? 0x61 : 0x78
        memset(payload, filler, range.count)
        let overlap = range.clamped(to: 0..<prefix.count)
        if !overlap.isEmpty {
            prefix.withUnsafeBytes { bytes in
                (payload + (overlap.lowerBound - range.lowerBound))
                    .copyMemory(from: bytes.baseAddress! + overlap.lowerBound, byteCount: overlap.count)
            }
        }
    }
}
