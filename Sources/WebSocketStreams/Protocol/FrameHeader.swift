/// The fixed part of one frame as it came off the wire (RFC 6455 section 5.2).
struct FrameHeader: Sendable, Hashable {
    var isFinal: Bool
    /// RSV1: set on the first frame of a compressed message (RFC 7692).
    var isCompressed: Bool
    var opcode: FrameOpcode
    var payloadLength: UInt64
}
