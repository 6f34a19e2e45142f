import CZlib

/// Decompresses the messages a server sends with permessage-deflate (RFC 7692 section 7.2.2),
/// on zlib's raw inflate.
///
/// A compressed message arrives frame by frame, and a frame possibly in pieces: feed every
/// piece of payload, in order, to ``inflate(_:into:limit:)``, then call
/// ``finishMessage(into:limit:)`` once after the final frame. Decompressed bytes are
/// appended to the caller's buffer, which never grows past `limit`: a small message that
/// inflates to gigabytes (a "deflate bomb") stops with ``InflateOutcome/tooLarge`` having
/// allocated about `limit` bytes at most.
///
/// Decoding uses the window the server answered with `server_max_window_bits` (15 bits, 32 KiB,
/// when it answered none, as libwebsockets does whatever was asked), but never less than 9
/// bits: zlib-based servers that agree to `server_max_window_bits=8` really compress with 9
/// (zlib has no 8-bit raw deflate). With `server_no_context_takeover` the stream is reset after
/// every message.
///
/// zlib's state (about 7 KiB, plus the window once output arrives) is freed whenever a read is
/// used up between messages (``pausedBetweenMessages()``). With context takeover the window is
/// the context: when `releasesWhenIdle` (the default) it is saved first
/// (`inflateGetDictionary`: at most the bytes the connection received, capped at the window)
/// and primes the next message's stream (`inflateSetDictionary`), so an idle connection holds
/// only the window it saw; otherwise the state stays.
///
/// After ``InflateOutcome/tooLarge`` or ``InflateOutcome/corrupt(_:)`` the inflater refuses
/// all further input (the connection fails anyway).
// Confined to the connection's loop thread.
package final class MessageInflater: MessageDecompressor {
    /// What became of the input given to the inflater.
    package typealias InflateOutcome = DecompressionOutcome

    /// The 4 octets a sender strips from the end of every compressed message (the end of
    /// an empty stored block) and a receiver appends before decompressing (RFC 7692 7.2.2).
    private static let messageTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
    /// Output space given to zlib at most per call.
    private static let largestStep = 64 * 1024
    /// Zeros to extend the output with before zlib overwrites them: appending a slice of
    /// an array is a plain copy even in unoptimized builds, unlike `repeatElement`.
    private static let zeros = [UInt8](repeating: 0, count: largestStep)

    /// zlib's inflate state, allocated with the object and released in `deinit`.
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether zlib's state is allocated (`inflateEnd` is owed). Without context takeover
    /// it is reset after each message, kept through the messages of one read, and freed
    /// when a read is used up between messages (``pausedBetweenMessages()``).
    private var isStreamInitialized = false
    /// Whether the server resets its window after each message (`server_no_context_takeover`).
    private let resetsAfterEachMessage: Bool
    /// The LZ77 window inflate keeps, in bits (see the type's discussion).
    private let windowBits: Int32
    /// Whether zlib's state is freed between reads even with context takeover (the window
    /// kept in ``savedWindow`` meanwhile).
    private let releasesWhenIdle: Bool
    /// With context takeover, while zlib's state is released: the last bytes the server's
    /// messages inflated to (at most the window), which prime the next message's stream.
    private var savedWindow: [UInt8] = []
    /// Set once the inflater failed; every later call reports it.
    private var failure: String?
    /// Whether compressed bytes arrived since the message began or a final block ended the
    /// deflate stream; without any, there is no block for the message tail to complete.
    private var hasInputSinceBoundary = false

    /// A raw inflate stream for the server's messages under `parameters`
    /// (`serverNoContextTakeover` decides whether the window survives between messages,
    /// `serverMaxWindowBits` its size). zlib's state is allocated by the first compressed
    /// message; with `releasesWhenIdle` it is freed whenever a read is used up between
    /// messages, context takeover or not.
    package init(parameters: DeflateParameters, releasesWhenIdle: Bool = true) {
        resetsAfterEachMessage = parameters.serverNoContextTakeover
        windowBits = Int32(max(9, min(15, parameters.serverMaxWindowBits)))
        self.releasesWhenIdle = releasesWhenIdle
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
    }

    /// Allocates zlib's state, primed with the saved window if there is one; on failure,
    /// every later call reports it.
    private func startStream() {
        let status = inflateInit2_(stream, -windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        isStreamInitialized = status == Z_OK
        if !isStreamInitialized {
            failure = "zlib could not start an inflate stream (status \(status))"
            return
        }
        if !savedWindow.isEmpty {
            let primed = savedWindow.withUnsafeBufferPointer { inflateSetDictionary(stream, $0.baseAddress, UInt32($0.count)) }
            if primed != Z_OK { failure = "zlib could not restore the window (status \(primed))" }
            savedWindow = []
        }
    }

    /// Whether zlib's buffers are allocated now (tests of the memory kept between messages).
    package var holdsDecompressorMemory: Bool { isStreamInitialized }

    /// The bytes kept while zlib's state is released: the window of a connection with context
    /// takeover (tests of the memory kept between messages).
    package var savedWindowByteCount: Int { savedWindow.count }

    deinit {
        if isStreamInitialized { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Decompresses the next piece of a message's payload and appends the result to `output`.
    ///
    /// Pieces may be split anywhere: the result is the same as for the payload in one piece.
    /// `output.count` never exceeds `limit`, and `output`'s capacity grows to at most
    /// `limit` here. Returns ``InflateOutcome/tooLarge`` as soon as the decompressed
    /// message would pass `limit`.
    package func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) -> InflateOutcome {
        if let failure { return .corrupt(failure) }
        guard !input.isEmpty else { return .ok }
        if !isStreamInitialized {
            startStream()
            if let failure { return .corrupt(failure) }
        }
        hasInputSinceBoundary = true
        return remember(feed(input, into: &output, limit: limit))
    }

    /// Ends the current message: appends the stripped tail `00 00 FF FF`, which flushes the
    /// last decompressed bytes into `output`, and resets the window when the server uses
    /// no context takeover.
    ///
    /// Reports ``InflateOutcome/corrupt(_:)`` when the payload stopped inside a deflate block
    /// (a truncated or non-conforming message). A message whose payload was empty, or which
    /// ended with a final block (BFINAL, RFC 7692 section 7.2.3.4), needs no tail.
    package func finishMessage(into output: inout [UInt8], limit: Int) -> InflateOutcome {
        if let failure { return .corrupt(failure) }
        if hasInputSinceBoundary {
            let outcome = Self.messageTail.withUnsafeBytes { feed($0, into: &output, limit: limit) }
            guard case .ok = outcome else { return remember(outcome) }
            // zlib sets bit 7 of data_type when it stopped between blocks, as it must
            // right after the empty stored block the tail completes.
            if hasInputSinceBoundary, stream.pointee.data_type & 128 == 0 {
                return remember(.corrupt("the compressed message ends inside a deflate block"))
            }
        }
        hasInputSinceBoundary = false
        if resetsAfterEachMessage, isStreamInitialized, inflateReset(stream) != Z_OK {
            return remember(.corrupt("zlib could not reset the inflate stream"))
        }
        return .ok
    }

    /// The bytes read so far are used up and no message is in progress: without context
    /// takeover nothing needs the window until the next message, so zlib's memory is freed
    /// (an idle connection holds none); with it the window is the context: saved and the
    /// memory freed when releasing while idle, else kept.
    package func pausedBetweenMessages() {
        guard isStreamInitialized, !hasInputSinceBoundary, failure == nil else { return }
        if !resetsAfterEachMessage {
            guard releasesWhenIdle else { return }
            var length: UInt32 = 0
            guard inflateGetDictionary(stream, nil, &length) == Z_OK else { return }
            savedWindow = [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, count in
                var copied = length
                count = inflateGetDictionary(stream, buffer.baseAddress, &copied) == Z_OK ? Int(copied) : 0
            }
            // Had the copy failed, the stream could not be restored: keep it instead.
            guard savedWindow.count == Int(length) else {
                savedWindow = []
                return
            }
        }
        inflateEnd(stream)
        isStreamInitialized = false
    }

    /// Keeps a failing outcome so later calls refuse to continue; returns `outcome`.
    private func remember(_ outcome: InflateOutcome) -> InflateOutcome {
        switch outcome {
        case .ok: break
        case .tooLarge: failure = "the message was already too large"
        case .corrupt(let reason): failure = reason
        }
        return outcome
    }

    /// Runs all of `input` through zlib in pieces zlib can count (`avail_in` is 32 bits).
    private func feed(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) -> InflateOutcome {
        guard let base = input.baseAddress else { return .ok }
        var consumed = 0
        while consumed < input.count {
            let chunk = min(input.count - consumed, Int(UInt32.max))
            stream.pointee.next_in = UnsafeMutablePointer(mutating: (base + consumed).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(chunk)
            let outcome = inflateAvailableInput(into: &output, limit: limit)
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
            guard case .ok = outcome else { return outcome }
            consumed += chunk
        }
        return .ok
    }

    /// Inflates until zlib consumed its pending input and has no output left to give.
    private func inflateAvailableInput(into output: inout [UInt8], limit: Int) -> InflateOutcome {
        var step = min(max(Int(stream.pointee.avail_in) * 4, 1024), 64 * 1024)
        while true {
            let room = limit - output.count
            let status: Int32
            let filledOutput: Bool
            if room <= 0 {
                // No room left: ask zlib for one more byte to learn whether the message
                // goes on. It may consume input without producing anything (a block header).
                var probe: UInt8 = 0
                status = withUnsafeMutablePointer(to: &probe) { probe in
                    stream.pointee.next_out = probe
                    stream.pointee.avail_out = 1
                    return CZlib.inflate(stream, Z_SYNC_FLUSH)
                }
                stream.pointee.next_out = nil
                if stream.pointee.avail_out == 0 { return .tooLarge }
                filledOutput = false
            } else {
                let size = min(room, step)
                let start = output.count
                Self.reserveCapacity(in: &output, for: start + size, limit: limit)
                output.append(contentsOf: Self.zeros[..<size])
                status = output.withUnsafeMutableBufferPointer { buffer in
                    stream.pointee.next_out = buffer.baseAddress! + start
                    stream.pointee.avail_out = UInt32(size)
                    return CZlib.inflate(stream, Z_SYNC_FLUSH)
                }
                let unused = Int(stream.pointee.avail_out)
                stream.pointee.next_out = nil
                stream.pointee.avail_out = 0
                output.removeLast(unused)
                filledOutput = unused == 0
                step = min(step * 2, Self.largestStep)
            }

            switch status {
            case Z_OK, Z_BUF_ERROR:
                // Output space to spare means zlib stopped for want of input.
                if filledOutput { continue }
                if stream.pointee.avail_in == 0 { return .ok }
                if status == Z_BUF_ERROR { return .corrupt("zlib made no progress on the compressed data") }
            case Z_STREAM_END:
                // The sender ended the deflate stream with a final block. Whatever follows
                // in the message is a new stream that may still refer to the old window.
                if let reason = restartKeepingWindow() { return .corrupt(reason) }
                hasInputSinceBoundary = stream.pointee.avail_in > 0
                if !hasInputSinceBoundary { return .ok }
            case Z_DATA_ERROR:
                return .corrupt(zlibMessage(default: "invalid compressed data"))
            case Z_MEM_ERROR:
                return .corrupt("zlib ran out of memory")
            default:
                return .corrupt(zlibMessage(default: "zlib failed with status \(status)"))
            }
        }
    }

    /// Resets the stream after a final block but keeps the last window of output, so the
    /// sender's context takeover still works. Returns a reason on failure.
    private func restartKeepingWindow() -> String? {
        var window = [UInt8](repeating: 0, count: 1 << Int(windowBits))
        var length: UInt32 = 0
        let kept = window.withUnsafeMutableBufferPointer { inflateGetDictionary(stream, $0.baseAddress, &length) }
        guard kept == Z_OK, inflateReset(stream) == Z_OK else { return "zlib could not restart after a final block" }
        // Kept even without context takeover: later blocks of the same message may refer
        // to it; finishMessage forgets it at the message's end.
        if length == 0 { return nil }
        let restored = window.withUnsafeBufferPointer { inflateSetDictionary(stream, $0.baseAddress, length) }
        return restored == Z_OK ? nil : "zlib could not restore the window after a final block"
    }

    /// zlib's description of the last error, or `fallback` when it gave none.
    private func zlibMessage(default fallback: String) -> String {
        guard let message = stream.pointee.msg else { return fallback }
        return "invalid compressed data: " + String(cString: message)
    }

    /// Grows `output`'s capacity to hold `needed` bytes: geometrically, as appending would,
    /// but never beyond `limit` (`needed` is at most `limit`).
    private static func reserveCapacity(in output: inout [UInt8], for needed: Int, limit: Int) {
        guard output.capacity < needed else { return }
        let doubled = output.capacity > Int.max / 2 ? Int.max : output.capacity * 2
        output.reserveCapacity(min(max(doubled, needed), max(limit, needed)))
    }
}
