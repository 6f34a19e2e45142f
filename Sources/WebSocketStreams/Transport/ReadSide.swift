import SynchronizationSupport
import FoundationEssentials
import WebSocketCore

/// What the loop keeps from one read of a connection's socket to the next: the frame
/// assembler, input held back while reading is paused, and storage reused by every read.
struct ReadSide {
    /// Turns bytes into messages and control frames (from the moment the protocol runs).
    var assembler: MessageAssembler?
    /// Reading from the socket is paused (the consumer's buffer is full, or a broken rule
    /// waits for the consumer).
    var isPaused = false
    /// Plaintext read but not fed to the assembler yet: reading paused in the middle of it.
    var heldInput: [UInt8] = []
    /// Events of the current read.
    var events: [InboundEvent] = []
    /// Messages of the current read not yet handed to the state machine.
    var incoming: [WebSocketMessage] = []
    /// Consumers to resume with messages of the current read.
    var deliveries: [(InboundQueue.Consumer, WebSocketMessage)] = []
}
