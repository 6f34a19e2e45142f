import CZlib

/// Compresses the messages this client sends with permessage-deflate (RFC 7692 section
/// 7.2.1), on zlib's raw deflate.
///
/// Each call to ``compress(_:into:)`` turns one whole message into the payload of a frame
/// with RSV1 set: deflate blocks ending in a sync flush whose 4-octet tail `00 00 FF FF`
/// is stripped. The window is at most `client_max_window_bits`; with
/// `client_no_context_takeover` it is emptied after every message.
///
/// zlib cannot produce raw deflate with an 8-bit window, so when the server demands
/// `client_max_window_bits=8` no deflater exists (see ``canCompress(with:)``) and every
/// message goes out uncompressed with RSV1 clear, which RFC 7692 section 6 allows.
// @unchecked: used by one thread at a time, the holder of its connection's write-side lock
// (``WriteSide``), which owns the frame writer it belongs to.
package final class MessageDeflater: @unchecked Sendable {
    /// Why no deflater could be made.
    package struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        package var description: String
    }

    /// The stripped tail of every sync-flushed message (RFC 7692 section 7.2.1).
    private static let messageTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
    /// Output space given to zlib at most per call.
    private static let largestStep = 64 * 1024
    /// Zeros to extend the output with before zlib overwrites them: appending a slice of
    /// an array is a plain copy even in unoptimized builds, unlike `repeatElement`.
    private static let zeros = [UInt8](repeating: 0, count: largestStep)
    /// zlib's deflate state: the struct lives as long as the object; zlib's own buffers
    /// exist while ``isStreamActive``.
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether `deflateInit2` has run and `deflateEnd` is owed.
    private var isStreamActive = false
    /// Whether the window is emptied after each message (`client_no_context_takeover`).
    /// zlib's buffers are then freed between messages, as nothing of them carries over;
    /// otherwise they are kept from the first compressed message on.
    private let resetsAfterEachMessage: Bool
    private let windowBits: Int32
    private let level: Int32
    private let memoryLevel: Int32

    /// Whether zlib can compress under `parameters`: `false` for an 8-bit client window,
    /// which raw deflate in zlib refuses. The connection then sends messages uncompressed.
    package static func canCompress(with parameters: DeflateParameters) -> Bool {
        (9...15).contains(parameters.clientMaxWindowBits)
    }

    /// A raw deflate stream with `clientMaxWindowBits` and `clientNoContextTakeover` from
    /// `parameters`, at compression `level` (0...9) and `memoryLevel` (1...9).
    ///
    /// - Throws: ``Failure`` when ``canCompress(with:)`` is `false`.
    package init(parameters: DeflateParameters, level: Int = 6, memoryLevel: Int = 8) throws(Failure) {
        guard Self.canCompress(with: parameters) else {
            throw Failure(description: "zlib cannot compress with a \(parameters.clientMaxWindowBits)-bit window")
        }
        resetsAfterEachMessage = parameters.clientNoContextTakeover
        windowBits = Int32(parameters.clientMaxWindowBits)
        self.level = Int32(level)
        self.memoryLevel = Int32(memoryLevel)
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // zlib's buffers (about 300 KiB with a 15-bit window) are allocated by the first
        // message that is compressed: a connection that never sends one never pays for them.
    }

    deinit {
        if isStreamActive { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Whether zlib's buffers are allocated now (tests of the memory kept between messages).
    package var holdsCompressorMemory: Bool { isStreamActive }

    /// Allocates zlib's state; returns why it could not.
    private func startStream() -> Failure? {
        let status = deflateInit2_(
            stream, level, Z_DEFLATED, -windowBits, memoryLevel, Z_DEFAULT_STRATEGY,
            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)
        )
        guard status == Z_OK else { return Failure(description: "zlib could not start a deflate stream (status \(status))") }
        isStreamActive = true
        return nil
    }

    /// Compresses one whole message and appends the frame payload to `output` (whatever
    /// `output` already holds stays). An empty message becomes the single octet `00`
    /// (RFC 7692 section 7.2.3.6).
    ///
    /// Without context takeover the window is emptied after the message; `moreFollow` keeps
    /// zlib's buffers for the next message (a burst pays no allocation per message), else
    /// they are freed.
    package func compress(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], moreFollow: Bool = false) {
        guard let base = input.baseAddress, !input.isEmpty else {
            // An empty stored block's header; zlib would emit nothing for a flush without
            // input right after another flush. The window is unchanged either way.
            output.append(0x00)
            return
        }
        if !isStreamActive, let failure = startStream() {
            preconditionFailure(failure.description)
        }
        let start = output.count
        var consumed = 0
        while consumed < input.count {
            let chunk = min(input.count - consumed, Int(UInt32.max))
            let isLastChunk = consumed + chunk == input.count
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (base + consumed).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(chunk)
            deflateAvailableInput(into: &output, flush: isLastChunk ? Z_SYNC_FLUSH : Z_NO_FLUSH)
            stream.pointee.next_in = nil
            consumed += chunk
        }
        // A sync flush always ends on an empty stored block: drop its LEN and NLEN.
        precondition(
            output.count - start >= 4 && output[(output.count - 4)...].elementsEqual(Self.messageTail),
            "zlib's sync flush did not end with 00 00 FF FF"
        )
        output.removeLast(4)
        if resetsAfterEachMessage {
            if moreFollow {
                precondition(deflateReset(stream) == Z_OK, "zlib could not reset the deflate stream")
            } else {
                deflateEnd(stream)
                isStreamActive = false
            }
        }
    }

    /// Deflates until zlib took all pending input and, for a flush, wrote all its output.
    private func deflateAvailableInput(into output: inout [UInt8], flush: Int32) {
        // One reservation that almost always fits the whole chunk; zlib then writes it in
        // steps of at most 64 KiB.
        let bound = Int(deflateBound(stream, UInt(stream.pointee.avail_in))) + 64
        if output.capacity < output.count + bound {
            output.reserveCapacity(output.count + bound)
        }
        while true {
            let start = output.count
            // Fill the reserved space first; past it (rare), let the array grow as usual.
            let spare = output.capacity - start
            let size = spare > 0 ? min(spare, Self.largestStep) : Self.largestStep
            output.append(contentsOf: Self.zeros[..<size])
            let status = output.withUnsafeMutableBufferPointer { buffer in
                stream.pointee.next_out = buffer.baseAddress! + start
                stream.pointee.avail_out = UInt32(size)
                return deflate(stream, flush)
            }
            let unused = Int(stream.pointee.avail_out)
            stream.pointee.next_out = nil
            stream.pointee.avail_out = 0
            output.removeLast(unused)
            precondition(status == Z_OK || status == Z_BUF_ERROR, "zlib deflate failed with status \(status)")
            // zlib returns with space to spare only once it has nothing more to write.
            if unused > 0 && stream.pointee.avail_in == 0 { return }
        }
    }
}
