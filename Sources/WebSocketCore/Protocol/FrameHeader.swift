/// The fixed part of one frame as it came off the wire (RFC 6455 section 5.2).
package struct FrameHeader: Sendable, Hashable {
    package var isFinal: Bool
    /// RSV1: set on the first frame of a compressed message (RFC 7692).
    package var isCompressed: Bool
    package var opcode: FrameOpcode
    package var payloadLength: UInt64
}
