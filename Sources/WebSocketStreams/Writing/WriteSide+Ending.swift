import SynchronizationSupport
import WebSocketCore
extension WriteSide {
    /// What the peer's TCP acknowledged of what was written, as the connection ends.
    struct Delivery {
        /// Messages written whose bytes were not all acknowledged, then those the writer
        /// had taken and not finished, oldest first.
        var unsent: [WebSocketMessage] = []
        /// Whether this side's close frame (if it wrote one) was acknowledged.
        var closeFrameAcknowledged = true
    }

    /// Settles the stream as the connection ends (direct writes are closed by then): every
    /// message written and not acknowledged (`acknowledged` is the peer's count, `nil`
    /// where the socket cannot tell: a Unix socket, or a descriptor already gone, and then
    /// every written message counts as delivered, as TCP's own success would have it), and
    /// every message taken and not written whole. Empties the write side.
    func settle(acknowledged: Int?) -> Delivery {
        state.withLock { state in
            var delivery = Delivery()
            if let acknowledged {
                if state.tracksDelivery { delivery.unsent = state.ledger.unacknowledged(acknowledged: acknowledged) }
                delivery.closeFrameAcknowledged = state.closeFrameStreamEnd.map { $0 <= acknowledged } ?? true
            }
            delivery.unsent += state.frames.unwrittenMessages
            state.ledger.removeAll()
            state.frames = FrameWriter()
            return delivery
        }
    }

    /// The protocol starts (the handshake succeeded): frames are written with `frames`
    /// (with the negotiated deflater), and delivery is tracked when the socket can tell.
    func start(with frames: FrameWriter, tracksDelivery: Bool) {
        state.withLock { state in
            state.frames = frames
            state.tracksDelivery = tracksDelivery
        }
    }

    /// Queues a control frame (a pong, keep-alive's ping); returns how many wait. Loop only.
    func enqueueControl(_ opcode: FrameOpcode, payload: [UInt8]) -> Int {
        state.withLock { state in
            state.frames.enqueueControl(opcode, payload: payload)
            return state.frames.pendingControlCount
        }
    }

    /// Queues this side's close frame ahead of every message not started yet (a failure, or
    /// the answer to the peer's close). Loop only.
    func enqueueCloseNow(_ frame: CloseFrame) {
        state.withLock { $0.frames.enqueueCloseNow(frame) }
    }
}
