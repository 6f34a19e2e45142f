import FoundationEssentials
@testable import WebSocketStreams
import WebSocketCore

/// One deterministic run: a reconnecting client (``ReconnectStateMachine`` and its queue,
/// composed as ``ReconnectingStorage`` composes them) over a ``ClientEngine`` per connection,
/// a simulated network (reads split anywhere, writes taken in part, a bounded wire, drops
/// at any byte) and a ``SimulatedPeer``, all on virtual time. Invariants are checked after
/// every step; the first one broken ends the run.
public struct Simulation {
    static let maxFragments = 4
    static let maxMessageSize = 1000
    /// Bytes the wire holds before the client's socket takes no more (the TCP window).
    static let wireCapacity = 1024
    static let maxSendSize = 1000

    /// What a run did: how often each invariant was checked, and the first one broken.
    public struct Outcome: Sendable {
        public var tally: InvariantTally
        public var violation: InvariantViolation?
    }

    /// One connection: the engine, the peer, and the bytes between them.
    struct Link {
        var engine: ClientEngine
        var peer: SimulatedPeer
        /// Client bytes on the wire, not yet at the peer.
        var wire: [UInt8] = []
        /// Client stream bytes the peer's TCP acknowledged.
        var acknowledged = 0
        /// Peer bytes on their way to the client.
        var toClient: [UInt8] = []
        var deliveredToClient = 0
        var peerReads = true
        /// The peer's socket is gone (after its FIN, or a reset either way).
        var peerGone = false
        /// The peer's FIN follows `toClient`.
        var finPending = false
        var opened = false
        var settled = false
        var clientClosedSocket = false
        var endings = 0
        var deliveredSeen = 0
    }

    let seed: UInt64
    let configuration: WebSocketConfiguration
    let policy: ReconnectPolicy
    var reconnect: ReconnectStateMachine
    var now: ContinuousClock.Instant
    var messages: [Int: (message: WebSocketMessage, compress: Bool)] = [:]
    var outbox: [Int] = []
    var nextID = 0
    var lastDelivered = 0
    var delivered = Set<Int>()
    var reportedUnsent = Set<Int>()
    var link: Link?
    var retryAt: ContinuousClock.Instant?
    var nextAnswer = SimulationEvent.Answer.accept
    var finished = false
    var connections = 0
    var tally = InvariantTally()

    init(seed: UInt64) {
        self.seed = seed
        var random = SplitMix64(seed: seed ^ 0xC0FF_EE00_D15E_A5E5)
        var configuration = WebSocketConfiguration()
        configuration.compression = WebSocketCompression(isEnabled: random.chance(50))
        configuration.compression.threshold = random.chance(50) ? 16 : 128
        if random.chance(30) {
            configuration.pingInterval = .seconds(3)
            configuration.pongTimeout = .seconds(1)
        } else {
            configuration.pingInterval = nil
        }
        configuration.maxBufferedMessages = 2 + random.below(6)
        configuration.maxBufferedSendBytes = 200 + random.below(2000)
        configuration.maxMessageSize = Self.maxMessageSize
        configuration.maxFragmentsPerMessage = Self.maxFragments
        configuration.connectTimeout = .seconds(5)
        self.configuration = configuration
        policy = ReconnectPolicy(
            initialDelay: .milliseconds(200), maxAttempts: 4, minimumUptime: .seconds(1),
            reconnectAfterNormalClosure: random.chance(30), maxQueuedMessages: 6 + random.below(20))
        reconnect = ReconnectStateMachine(policy: policy)
        now = ContinuousClock.now
    }

    /// Runs `events` from the start, then closes and lets everything finish.
    public static func run(seed: UInt64, events: [SimulationEvent]) -> Outcome {
        var simulation = Simulation(seed: seed)
        do throws(InvariantViolation) {
            try simulation.handle(simulation.reconnect.start())
            for event in events {
                try simulation.step(event)
            }
            try simulation.drain()
        } catch {
            return Outcome(tally: simulation.tally, violation: error)
        }
        return Outcome(tally: simulation.tally, violation: nil)
    }

    func violation(_ invariant: Invariant, _ detail: String) -> InvariantViolation {
        InvariantViolation(invariant: invariant, detail: detail)
    }

    // MARK: - Steps

    mutating func step(_ event: SimulationEvent) throws(InvariantViolation) {
        tally.steps += 1
        switch event {
        case .send(let size, let binary, let compress): userSend(size: size, binary: binary, compress: compress)
        case .ping: if link?.engine.isOpen == true { _ = link?.engine.ping() }
        case .close(let code): userEnd(.completed, code: WebSocketCloseCode(rawValue: code))
        case .cancel: userEnd(.cancelled, code: .goingAway)
        case .consume: try consume()
        case .peerSend(let size, let fragments, let binary, let compress):
            link?.peer.send(size: size, fragments: fragments, binary: binary, compress: compress)
        case .peerPing: link?.peer.ping()
        case .peerClose(let code): link?.peer.close(code: code)
        case .peerMisbehaves(let misbehaviour): link?.peer.misbehave(misbehaviour)
        case .peerDrops(let reset): peerDrops(reset: reset)
        case .peerReads(let reads): link?.peerReads = reads
        case .toWire(let bytes): toWire(bytes)
        case .toPeer(let bytes): try toPeer(bytes)
        case .toClient(let bytes): toClient(bytes)
        case .advance(let milliseconds): try advance(to: now + .milliseconds(milliseconds))
        case .nextAnswer(let answer): nextAnswer = answer
        }
        try settle()
        try check()
    }

    mutating func userSend(size: Int, binary: Bool, compress: Bool) {
        guard !finished, outbox.count < policy.maxQueuedMessages else { return }  // throws in production
        nextID += 1
        var payload = Array("#\(nextID);".utf8)
        payload += [UInt8](repeating: 0x2E, count: max(0, size - payload.count))
        messages[nextID] = (binary ? .binary(Data(payload)) : .text(String(decoding: payload, as: UTF8.self)), compress)
        outbox.append(nextID)
        pump()
    }

    /// The supervisor's pump: queued messages go to the open connection, in order, while it takes them.
    mutating func pump() {
        guard var current = link, current.opened, current.engine.isOpen else { return }
        while let id = outbox.first, let (message, compress) = messages[id],
              current.engine.send(OutgoingMessage(message: message, options: SendOptions(mayCompress: compress))) {
            outbox.removeFirst()
        }
        link = current
    }

    mutating func userEnd(_ end: ReconnectingWebSocket.State, code: WebSocketCloseCode) {
        guard reconnect.requestEnd(end) else { return }
        if var current = link, !current.engine.hasEnded {
            if end == .cancelled { current.engine.cancel(now: now) } else { current.engine.close(code: code, now: now) }
            link = current
        } else if !finished {
            retryAt = nil
            finish()
        }
    }

    mutating func consume() throws(InvariantViolation) {
        guard var current = link else { return }
        for event in current.engine.takeEvents(now: now) {
            if case .ended = event { current.endings += 1 }
        }
        link = current
        tally.checked(.endsExactlyOnce)
        if current.endings > 1 { throw violation(.endsExactlyOnce, "connection \(connections) ended \(current.endings) times") }
    }

    mutating func peerDrops(reset: Bool) {
        guard var current = link, !current.peerGone else { return }
        if reset {
            current.toClient = []
            current.wire = []
            current.peerGone = true
            current.engine.socketClosed(acknowledged: current.acknowledged, abnormal: .connectionFailed("reset by the peer"))
        } else {
            current.finPending = true
            current.peer.wantsFIN = true
            current.peerReads = false
        }
        link = current
    }

    mutating func toWire(_ bytes: Int) {
        guard var current = link else { return }
        let room = Self.wireCapacity - current.wire.count
        guard room > 0 else { return }
        current.wire += current.engine.takeOutput(budget: min(bytes, room), now: now)
        link = current
    }

    mutating func toPeer(_ bytes: Int) throws(InvariantViolation) {
        guard var current = link, current.peerReads, !current.peerGone, !current.wire.isEmpty else { return }
        let count = min(bytes, current.wire.count)
        let chunk = Array(current.wire[..<count])
        current.wire.removeFirst(count)
        current.acknowledged += count
        // As production does: acknowledged entries are forgotten only once enough gathered.
        if current.engine.ledger.needsPruning { current.engine.acknowledged(current.acknowledged) }
        let echoChecks = current.peer.echoChecks
        current.peer.read(chunk)
        if current.peer.echoChecks > echoChecks { tally.checked(.closeCodeEchoed) }
        link = current
        tally.checked(.peerSeesOnlyLegalFrames)
        if let problem = current.peer.violation { throw violation(.peerSeesOnlyLegalFrames, problem) }
        try takePeerDeliveries()
    }

    mutating func takePeerDeliveries() throws(InvariantViolation) {
        guard var current = link else { return }
        while current.deliveredSeen < current.peer.delivered.count {
            let id = current.peer.delivered[current.deliveredSeen]
            current.deliveredSeen += 1
            tally.checked(.deliveredOnceInOrder)
            if delivered.contains(id) { throw violation(.deliveredOnceInOrder, "message \(id) reached the peer twice") }
            if id <= lastDelivered { throw violation(.deliveredOnceInOrder, "message \(id) reached the peer after \(lastDelivered)") }
            if reportedUnsent.contains(id) { throw violation(.deliveredOrReportedUnsent, "message \(id) was reported unsent, then delivered") }
            delivered.insert(id)
            lastDelivered = id
        }
        link = current
    }

    mutating func toClient(_ bytes: Int) {
        guard var current = link, !current.engine.hasEnded else { return }
        let count = min(bytes, current.toClient.count)
        if count > 0 {
            let peerCloseBefore = Self.peerCloseSeen(current.engine.machine)
            let localTaken = Self.localCloseTaken(current.engine.machine)
            current.engine.receive(Array(current.toClient[..<count]), now: now)
            current.toClient.removeFirst(count)
            current.deliveredToClient += count
            if !peerCloseBefore, !localTaken, Self.peerCloseSeen(current.engine.machine), let sent = current.peer.sentClose {
                current.peer.expectedEcho = .some(sent)
            }
        }
        if current.toClient.isEmpty, current.finPending, !current.peerGone {
            current.peerGone = true
            current.engine.socketClosed(acknowledged: current.acknowledged)
        }
        link = current
    }

    static func peerCloseSeen(_ machine: ConnectionStateMachine) -> Bool {
        if case .closing(let closing) = machine.state { return closing.peer != nil }
        return machine.isClosed
    }

    static func localCloseTaken(_ machine: ConnectionStateMachine) -> Bool {
        if case .closing(let closing) = machine.state, let local = closing.local { return local.progress != .queued }
        return false
    }

    /// Time passes to `target`; every timer due on the way fires at its time.
    mutating func advance(to target: ContinuousClock.Instant) throws(InvariantViolation) {
        for _ in 0..<64 {
            let deadline = [link?.engine.nextDeadline, retryAt].compactMap { $0 }.min()
            guard let deadline, deadline <= target else { break }
            now = max(now, deadline)
            if let due = retryAt, due <= now {
                retryAt = nil
                try handle(reconnect.retryDue())
            } else if var current = link {
                current.engine.timerFired(now: now)
                link = current
            }
            try settle()
        }
        now = max(now, target)
    }
}
