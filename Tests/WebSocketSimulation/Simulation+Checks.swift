import FoundationEssentials
@testable import WebSocketStreams
import WebSocketCore

extension Simulation {
    // MARK: - The supervisor

    /// What follows from the step: the peer's bytes head for the client, a socket the engine
    /// is done with is closed, an opened or ended connection moves the reconnect machine.
    mutating func settle() throws(InvariantViolation) {
        guard var current = link else { return }
        if !current.peer.output.isEmpty, !current.peerGone {
            current.toClient += current.peer.output
        }
        current.peer.output = []
        if current.peer.wantsFIN, !current.finPending, !current.peerGone { current.finPending = true }
        if current.engine.wantsSocketClosed, !current.clientClosedSocket {
            // The client closes its socket, and hears so (as lws reports every close, even
            // after a failed handshake ended the engine): what is still on the wire is lost.
            current.clientClosedSocket = true
            current.wire = []
            current.peerGone = true
            current.engine.socketClosed(acknowledged: current.acknowledged)
        }
        if current.engine.didOpen, !current.opened {
            current.opened = true
            reconnect.connected(subprotocol: nil, at: now)
        }
        link = current
        if current.toClient.isEmpty, current.finPending, !current.peerGone { toClient(0) }
        guard let ending = link?.engine.machine.ending, link?.settled == false else {
            pump()
            return
        }
        link?.settled = true
        try checkEnding(ending)
        // Accepted by the connection but never acknowledged by the peer: first in line for the next one.
        let unsent = ending.unsentMessages.map(Self.id(of:))
        for id in unsent.reversed() {
            if let (message, _) = messages[id] { messages[id] = (message, false) }
            outbox.insert(id, at: 0)
        }
        let error = ending.error ?? .closed(code: ending.closeCode, reason: ending.closeReason)
        if current.opened {
            try handle(reconnect.connectionEnded(error, at: now, random: 0.5))
        } else {
            try handle(reconnect.attemptFailed(error, random: 0.5))
        }
    }

    static func id(of message: WebSocketMessage) -> Int {
        message.withPayloadBytes { bytes in
            guard let semicolon = bytes.firstIndex(of: 0x3B) else { return 0 }
            return Int(String(decoding: bytes[1..<semicolon], as: UTF8.self)) ?? 0
        }
    }

    mutating func handle(_ action: ReconnectStateMachine.Action) throws(InvariantViolation) {
        switch action {
        case .connect:
            try retireLink()
            connections += 1
            let engine = ClientEngine(
                url: try! WebSocketURL(parsing: "ws://simulated.test/feed"), configuration: configuration, now: now,
                keyBytes: (0..<16).map { UInt8(truncatingIfNeeded: connections &+ $0) },
                maskingKeys: .seeded(seed &+ UInt64(connections)), keepaliveGrid: false)
            link = Link(engine: engine, peer: SimulatedPeer(answer: nextAnswer, maxMessageSize: Self.maxMessageSize, maxFragments: Self.maxFragments))
        case .wait(let delay, _):
            retryAt = now + delay
        case .finish:
            finish()
        }
    }

    /// The reconnecting socket is over: what is still queued is reported unsent.
    mutating func finish() {
        finished = true
        for id in outbox { reportedUnsent.insert(id) }
        outbox = []
    }

    /// The last connection's events are read; it must have ended exactly once.
    mutating func retireLink() throws(InvariantViolation) {
        guard link != nil else { return }
        try consume()
        tally.checked(.endsExactlyOnce)
        if let current = link, current.endings != 1 {
            throw violation(.endsExactlyOnce, "connection \(connections) ended \(current.endings) times")
        }
    }

    // MARK: - Invariants

    mutating func checkEnding(_ ending: WebSocketEnding) throws(InvariantViolation) {
        guard let current = link else { return }
        tally.checked(.validEndingWithCloseHandshake)
        let code = ending.closeCode.rawValue
        let valid = (1000...1003).contains(code) || (1005...1011).contains(code) || (3000...4999).contains(code)
        if !valid { throw violation(.validEndingWithCloseHandshake, "connection \(connections) ended with code \(code)") }
        guard code != 1006 else { return }
        let fromPeer = current.peer.sentClose.map { ($0 ?? 1005) == code } ?? false
        let fromClient = current.peer.clientClose.map { ($0 ?? 1005) == code } ?? false
        if !current.opened || !(fromPeer || fromClient) {
            throw violation(.validEndingWithCloseHandshake,
                "connection \(connections) ended with \(code), but no close frame with that code went either way")
        }
    }

    /// The invariants that hold after every step.
    mutating func check() throws(InvariantViolation) {
        guard var current = link else { return }
        let engine = current.engine
        tally.checked(.queuesWithinLimits)
        if engine.machine.outbound.bytes >= configuration.maxBufferedSendBytes + Self.maxSendSize {
            throw violation(.queuesWithinLimits, "the send queue holds \(engine.machine.outbound.bytes) bytes")
        }
        if engine.machine.inbound.count > configuration.maxBufferedMessages + 1 {
            throw violation(.queuesWithinLimits, "the receive buffer holds \(engine.machine.inbound.count) messages")
        }
        if engine.writer.pendingControlCount > 256 {
            throw violation(.queuesWithinLimits, "\(engine.writer.pendingControlCount) control frames wait")
        }
        if engine.hasEnded {
            tally.checked(.nothingArmedAfterEnding)
            let output = current.engine.takeOutput(budget: 1 << 16, now: now)
            if engine.nextDeadline != nil || engine.hasOutput || !output.isEmpty {
                throw violation(.nothingArmedAfterEnding, "connection \(connections) has a deadline or output after its ending")
            }
            link = current
        }
        if let end = current.peer.brokenRuleEnd, current.deliveredToClient >= end, !engine.hasEnded, !engine.wantsSocketClosed,
           !engine.isReadingPaused, engine.heldInput.isEmpty, current.opened {
            tally.checked(.brokenRuleFailsConnection)
            if engine.machine.error == nil, engine.machine.deferredFailure == nil, !Self.peerCloseSeen(engine.machine) {
                throw violation(.brokenRuleFailsConnection, "the client read a frame breaking a rule and did not fail the connection")
            }
        }
    }

    /// After the schedule: the user closes, and bytes and time flow until the socket is over.
    mutating func drain() throws(InvariantViolation) {
        try step(.close(code: 1000))
        let limit = now + .seconds(120)
        while !finished {
            tally.checked(.finishesInBoundedTime)
            if now > limit { throw violation(.finishesInBoundedTime, "the socket did not finish within 120 s of virtual time after close") }
            let before = (link?.engine.streamBytes ?? 0, link?.deliveredToClient ?? 0, link?.acknowledged ?? 0)
            try step(.consume)
            try step(.toWire(bytes: 1 << 16))
            try step(.toPeer(bytes: 1 << 16))
            try step(.toClient(bytes: 1 << 16))
            let after = (link?.engine.streamBytes ?? 0, link?.deliveredToClient ?? 0, link?.acknowledged ?? 0)
            if before == after, !finished {
                let next = [link?.engine.nextDeadline, retryAt].compactMap { $0 }.min() ?? now + .seconds(1)
                try step(.advance(milliseconds: max(1, Int((next - now) / .milliseconds(1)) + 1)))
            }
        }
        try retireLink()
        tally.checked(.deliveredOrReportedUnsent)
        for id in 1...max(1, nextID) where nextID > 0 {
            let wasDelivered = delivered.contains(id)
            let wasReported = reportedUnsent.contains(id)
            if wasDelivered == wasReported {
                throw violation(.deliveredOrReportedUnsent,
                    "message \(id) was \(wasDelivered ? "delivered and reported unsent" : "neither delivered nor reported unsent")")
            }
        }
    }
}
