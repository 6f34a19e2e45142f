/// The opcode of a WebSocket frame (RFC 6455 section 5.2). Values 3-7 and 11-15 are
/// reserved and have no case: a frame carrying one fails the connection.
package enum FrameOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes of payload, never fragmented.
    package var isControl: Bool { rawValue & 0x8 != 0 }
}
