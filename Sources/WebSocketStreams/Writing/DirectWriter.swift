import FoundationEssentials
import Glibc
import WebSocketCore

/// How a task writes its own message to the socket, as part of the ``WriteSide``.
///
/// A task's `send` that finds the write side's lock free, the
/// socket open for direct writes (``descriptor``), nothing queued before its message, and
/// the message small, encodes and masks the frame into ``scratch`` and writes it to the
/// socket itself, without blocking and without waking the loop: one thread hop fewer per
/// round trip on the default executor. What the kernel does not take joins the write
/// side's pending bytes, direct writes stop, and the loop is asked to write the rest (and
/// after it everything else) the usual way.
///
/// Only a send that comes at least ``burstGap`` after the previous one returned writes
/// directly: a task that sends again at once (a burst, or a pipeline answering a batch of
/// received messages) is better served by the queue, where the loop writes many messages
/// with one system call. A request/response exchange waits a round trip between sends.
///
/// The loop opens direct writes only while they cannot reorder anything: the connection is
/// open, its frame writer has nothing queued or half written, no close frame is queued, and
/// no earlier write (or TLS record) is waiting for room; it closes them (``descriptor`` = -1)
/// before the socket can close, so a task never writes to a descriptor that has been closed
/// and reused.
///
/// Over TLS the task encrypts its frame itself (``tls``): while direct writes are open, the
/// loop makes every call into the TLS session (decrypting included) under the same lock, so
/// the session is used by one thread at a time, and whoever holds the lock sends all the
/// ciphertext the session holds, in order.
struct DirectWriter {
    /// The largest payload a task writes itself; larger messages go through the loop, which
    /// writes them in budgeted slices between other connections' work.
    static let largestPayload = 16 * 1024
    private static let largestFrame = FrameEncoder.maxHeaderLength + largestPayload
    /// How long after the previous `send` returned a send must come to be written directly
    /// (nanoseconds): a send sooner than this is part of a burst. Sends that answer received
    /// messages one for one in a pipeline come 0.2-1 µs apart here; a request/response round
    /// trip over loopback takes 10 µs or more.
    static let burstGap = 10_000

    /// A monotonic clock in nanoseconds (`CLOCK_MONOTONIC`, read through the vDSO).
    static func monotonicNanoseconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }

    /// The socket while tasks may write to it directly; -1 while they may not.
    var descriptor: Int32 = -1
    /// The connection's TLS session while tasks may write directly over TLS.
    var tls: TLSSession?
    /// With permessage-deflate negotiated, only messages that would not be compressed
    /// anyway (shorter than ``FrameWriter/compressionThreshold``, or sent with
    /// `compress: false`) are written directly, so compression and its shared window stay the loop's.
    var largestCompressiblePayloadNow = DirectWriter.largestPayload
    /// Frames tasks wrote themselves (all or part of), for tests and diagnostics.
    private(set) var framesWritten = 0
    /// Direct writes the socket took only part of (the loop wrote the rest).
    private(set) var partialWrites = 0
    private var keys = MaskingKeySource(batchSize: 16)
    private var scratch: [UInt8] = []
    /// A frame's TLS records on their way to the socket (TLS only).
    private var cipher: [UInt8] = []

    /// What a direct write did.
    enum Outcome {
        /// The task may not write now; the message goes through the queue.
        case notTaken
        /// The whole frame is on its way.
        case sent
        /// Part of it went out; the rest waits in the write side's pending bytes and the
        /// loop must write it.
        case partial
        /// The socket (or TLS) failed, for this reason; the connection is lost.
        case failed(String)
    }

    /// Whether `message` may be written directly now (the state machine is asked too).
    func mayWrite(_ message: OutgoingMessage) -> Bool {
        descriptor >= 0
            && message.byteCount <= (message.options.mayCompress ? largestCompressiblePayloadNow : DirectWriter.largestPayload)
    }

    /// Encodes `message` as one masked frame and writes it to the socket without blocking;
    /// what the socket does not take goes to `pending`. `produced` is how many bytes the
    /// frame added to the outgoing stream (its TLS records, over TLS).
    mutating func write(_ message: WebSocketMessage, pending: inout PendingOutput) -> (outcome: Outcome, produced: Int) {
        let payloadLength = message.byteCount
        let frameLength = FrameEncoder.headerLength(payloadLength: payloadLength) + payloadLength
        if scratch.count < frameLength {
            // Grown, never shrunk: at most the largest direct frame (about 16 KiB) per connection.
            scratch = [UInt8](repeating: 0, count: max(frameLength, min(2 * scratch.count, Self.largestFrame), 256))
        }
        let key = keys.next()
        let descriptor = descriptor
        framesWritten += 1
        scratch.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress!
            _ = message.withPayloadBytes { FrameEncoder.writeFrame(into: base, opcode: message.opcode, payload: $0, key: key) }
        }
        if let tls {
            let encrypted = scratch.withUnsafeBytes { tls.writePlaintext(UnsafeRawBufferPointer(rebasing: $0[..<frameLength])) }
            guard encrypted else { return (stop(failing: "TLS refused to encrypt"), 0) }
            return sendCiphertext(of: tls, to: descriptor, pending: &pending)
        }
        let sent = scratch.withUnsafeBytes { RawSocket.send(UnsafeRawBufferPointer(rebasing: $0[..<frameLength]), to: descriptor) }
        return (settle(sent, of: scratch, count: frameLength, pending: &pending), frameLength)
    }

    /// Sends everything `tls` holds for the socket, with one `send(2)`: what the frame just
    /// became, and anything the session wrote on its own before it.
    private mutating func sendCiphertext(
        of tls: TLSSession, to descriptor: Int32, pending: inout PendingOutput
    ) -> (outcome: Outcome, produced: Int) {
        let count = tls.pendingCiphertextCount
        if cipher.count < count {
            // Grown, never shrunk: at most the largest direct frame's records per connection.
            cipher = [UInt8](repeating: 0, count: max(count, min(2 * cipher.count, Self.largestFrame + 1024), 256))
        }
        let (taken, outcome) = cipher.withUnsafeMutableBytes { buffer in
            let taken = tls.takeCiphertext(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]))
            return (taken, RawSocket.send(UnsafeRawBufferPointer(rebasing: buffer[..<taken]), to: descriptor))
        }
        return (settle(outcome, of: cipher, count: taken, pending: &pending), taken)
    }

    /// What sending the first `count` bytes of `bytes` came to: on a partial write the rest
    /// goes to `pending` and direct writes stop until the loop has sent it.
    private mutating func settle(
        _ outcome: RawSocket.SendOutcome, of bytes: [UInt8], count: Int, pending: inout PendingOutput
    ) -> Outcome {
        switch outcome {
        case .sent:
            return .sent
        case .partial(let written):
            bytes.withUnsafeBytes { pending.append(UnsafeRawBufferPointer(rebasing: $0[written..<count])) }
            partialWrites += 1
            descriptor = -1
            return .partial
        case .failed(let code):
            return stop(failing: SocketConnector.describe(code))
        }
    }

    private mutating func stop(failing reason: String) -> Outcome {
        descriptor = -1
        return .failed(reason)
    }
}
