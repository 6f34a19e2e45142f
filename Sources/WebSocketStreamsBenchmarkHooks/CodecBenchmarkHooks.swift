import FoundationEssentials
import WebSocketCore
import WebSocketStreams

/// The codec's hot paths, reachable from the allocation benchmarks in
/// `Benchmarks/Allocations` (a package of its own, which cannot see `package` symbols).
///
/// **Not API.** This type is behind `@_spi(Benchmarking)`: it may change or go away in
/// any release, and nothing outside the project's benchmarks should import it. Each
/// member runs the same code a connection runs for every message, on the same internal
/// types, so the benchmarks measure what production does:
/// - ``Encoder`` queues a message on the connection's frame writer and encodes it (header,
///   fresh masking key, masked payload) into a reused output buffer, as a flush does;
/// - ``Decoder`` feeds one read's worth of bytes to the message assembler, as the receive
///   path does, and hands over the messages it completes;
/// - ``mask(_:into:key:)`` and ``isValidUTF8(_:)`` are the masking and the incremental
///   UTF-8 check on their own;
/// - ``serverFrames(_:compressed:)`` builds the input the decoder reads.
@_spi(Benchmarking)
public enum CodecBenchmarkHooks {
    /// The outgoing side of one connection: messages become client frames in a buffer.
    ///
    /// Not API: for the allocation benchmarks only.
    public struct Encoder {
        private var writer: FrameWriter

        /// A writer with permessage-deflate off (`compressing == false`) or on with the
        /// default parameters (context takeover, 32 KiB window), as after a handshake.
        public init(compressing: Bool = false) {
            writer = FrameWriter(deflater: compressing ? try? MessageDeflater(parameters: DeflateParameters()) : nil)
        }

        /// Queues `message` and encodes what is queued into `buffer`, as one flush of the
        /// connection does; returns the bytes written (0 when `buffer` has no room).
        public mutating func encode(_ message: WebSocketMessage, into buffer: UnsafeMutableRawBufferPointer) -> Int {
            writer.enqueue(message)
            return writer.fill(buffer)
        }
    }

    /// The incoming side of one connection: bytes from the socket become messages.
    ///
    /// Not API: for the allocation benchmarks only.
    public struct Decoder {
        private var assembler: MessageAssembler
        /// Reused between reads, as the transport reuses its own.
        private var events: [InboundEvent] = []

        /// An assembler with permessage-deflate off, or on (`compressed`) with a server that
        /// resets its window after every message (`server_no_context_takeover`), so the
        /// same compressed bytes can be read again and again.
        ///
        /// - Parameter maxMessageSize: The largest message accepted (the configuration's default).
        public init(compressed: Bool = false, maxMessageSize: Int = WebSocketConfiguration().maxMessageSize) {
            var parameters = DeflateParameters()
            parameters.serverNoContextTakeover = true
            assembler = MessageAssembler(
                maxMessageSize: maxMessageSize, inflater: compressed ? MessageInflater(parameters: parameters) : nil)
        }

        /// Reads `bytes` as one read from the socket, calling `body` with each message they
        /// complete; returns how many there were. Returns `nil` when the bytes break a rule
        /// of the protocol or carry a close frame (the decoder then reads nothing more).
        public mutating func read(_ bytes: UnsafeRawBufferPointer, _ body: (WebSocketMessage) -> Void) -> Int? {
            assembler.read(bytes, into: &events)
            defer { events.removeAll(keepingCapacity: true) }
            var messages = 0
            for event in events {
                guard case .message(let message) = event else { return nil }
                body(WebSocketMessage(message))
                messages += 1
            }
            return messages
        }
    }

    /// Copies `source` to `destination` masked with `key` (the four key bytes in memory
    /// order), as every outgoing payload is. Not API: for the allocation benchmarks only.
    public static func mask(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawPointer, key: UInt32) {
        MaskingKey(bits: key).copyMasked(source, to: destination)
    }

    /// Whether `bytes` are complete UTF-8, by the incremental validator that checks
    /// fragmented and compressed text as it arrives. Not API: for the allocation benchmarks only.
    public static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isComplete
    }

    /// `messages` as a server sends them: one unmasked, final frame each, compressed
    /// (RSV1 set, every message deflated on its own) when `compressed` is `true`.
    /// Not API: it builds the input of the decoding benchmarks.
    public static func serverFrames(_ messages: [WebSocketMessage], compressed: Bool = false) -> [UInt8] {
        var parameters = DeflateParameters()
        parameters.clientNoContextTakeover = true
        let deflater = compressed ? try? MessageDeflater(parameters: parameters) : nil
        var frames: [UInt8] = []
        for message in messages {
            var payload: [UInt8]
            let opcode: FrameOpcode
            switch message {
            case .text(let string):
                payload = Array(string.utf8)
                opcode = .text
            case .binary(let data):
                payload = Array(data)
                opcode = .binary
            }
            if let deflater {
                var deflated: [UInt8] = []
                payload.withUnsafeBytes { deflater.compress($0, into: &deflated) }
                payload = deflated
            }
            frames.append(0x80 | (deflater == nil ? 0 : 0x40) | opcode.rawValue)
            switch payload.count {
            case ..<126:
                frames.append(UInt8(payload.count))
            case ..<65536:
                frames.append(126)
                frames.append(contentsOf: [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)])
            default:
                frames.append(127)
                frames.append(contentsOf: (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) })
            }
            frames.append(contentsOf: payload)
        }
        return frames
    }
}
