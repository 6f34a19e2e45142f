import FoundationEssentials

/// What the peer's bytes amounted to, in order: whole messages, control frames, or the
/// rule they broke (after which nothing more is read).
package enum InboundEvent: Sendable, Equatable {
    case message(MessageContent)
    case ping([UInt8])
    case pong([UInt8])
    case close(CloseFrame)
    case failure(ProtocolFailure)
}
