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
///
/// With context takeover, the only context that matters to the next message is the last
/// 2^windowBits bytes of input. When `releasesWhenIdle` (the default), a message after which
/// nothing more is queued saves that window (`deflateGetDictionary`: at most the bytes the
/// connection sent) and frees zlib's state; the next message re-creates it and primes it with
/// the window (`deflateSetDictionary`), so the bytes on the wire are those of a stream held
/// throughout, and an idle connection holds only the window it saw.
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
    /// With context takeover, while zlib's state is released: the last bytes of input (at
    /// most the window), which prime the next message's stream. Empty otherwise.
    private var savedWindow: [UInt8] = []
    /// Whether zlib's state is released when no more messages are queued (context takeover
    /// keeps its window in ``savedWindow`` meanwhile).
    private let releasesWhenIdle: Bool
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
    /// `parameters`, at compression `level` (0...9) and `memoryLevel` (1...9). With
    /// `releasesWhenIdle`, zlib's state is freed whenever no more messages are queued, and
    /// with context takeover the window is kept and restored (see the type's discussion).
    ///
    /// - Throws: ``Failure`` when ``canCompress(with:)`` is `false`.
    package init(
        parameters: DeflateParameters, level: Int = 6, memoryLevel: Int = 5, releasesWhenIdle: Bool = true
    ) throws(Failure) {
        guard Self.canCompress(with: parameters) else {
            throw Failure(description: "zlib cannot compress with a \(parameters.clientMaxWindowBits)-bit window")
        }
        resetsAfterEachMessage = parameters.clientNoContextTakeover
        windowBits = Int32(parameters.clientMaxWindowBits)
        self.level = Int32(level)
        self.memoryLevel = Int32(memoryLevel)
        self.releasesWhenIdle = releasesWhenIdle
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // zlib's buffers (38 KiB with a 12-bit window and memory level 5, 262 KiB with 15 and
        // 8) are allocated by the first message that is compressed: a connection that never
        // sends one never pays for them.
    }

    deinit {
        if isStreamActive { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Whether zlib's buffers are allocated now (tests of the memory kept between messages).
    package var holdsCompressorMemory: Bool { isStreamActive }

    /// The bytes kept while zlib's state is released: the window of a connection with context
    /// takeover (tests of the memory kept between messages).
    package var savedWindowByteCount: Int { savedWindow.count }

    /// Allocates zlib's state, primed with the saved window if there is one; returns why it could not.
    private func startStream() -> Failure? {
        let status = deflateInit2_(
            stream, level, Z_DEFLATED, -windowBits, memoryLevel, Z_DEFAULT_STRATEGY,
            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)
        )
        guard status == Z_OK else { return Failure(description: "zlib could not start a deflate stream (status \(status))") }
        isStreamActive = true
        if !savedWindow.isEmpty {
            let primed = savedWindow.withUnsafeBufferPointer {
                deflateSetDictionary(stream, $0.baseAddress, UInt32($0.count))
            }
            guard primed == Z_OK else { return Failure(description: "zlib could not restore the window (status \(primed))") }
            savedWindow = []
        }
        return nil
    }

    /// Keeps the window (the last bytes of input, at most 2^windowBits) and frees zlib's state.
    /// Only between messages: a sync flush left nothing pending, so the window is exactly the
    /// last bytes the peer's decompressor has seen.
    private func releaseKeepingWindow() {
        var length: UInt32 = 0
        guard deflateGetDictionary(stream, nil, &length) == Z_OK else { return }
        savedWindow = [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, count in
            var copied = length
            count = deflateGetDictionary(stream, buffer.baseAddress, &copied) == Z_OK ? Int(copied) : 0
        }
        // Had the copy failed, the stream could not be restored: keep it instead.
        guard savedWindow.count == Int(length) else {
            savedWindow = []
            return
        }
        deflateEnd(stream)
        isStreamActive = false
    }

    /// Compresses one whole message and appends the frame payload to `output` (whatever
    /// `output` already holds stays). An empty message becomes the single octet `00`
    /// (RFC 7692 section 7.2.3.6).
    ///
    /// Without context takeover the window is emptied after the message. `moreFollow` keeps
    /// zlib's buffers for the next message (a burst pays no allocation per message); else they
    /// are freed, without context takeover always, with it when releasing while idle (the
    /// window is saved first).
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
        } else if releasesWhenIdle && !moreFollow {
            releaseKeepingWindow()
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
