/// One step of a schedule. Every event carries all its parameters, so a schedule is a plain
/// list that replays identically and can be shrunk by dropping events: an event that does
/// not apply at its point (a peer send before the connection opened) does nothing.
public enum SimulationEvent: Equatable, Sendable, CustomStringConvertible {
    /// The user sends a message of `size` bytes on the reconnecting socket.
    case send(size: Int, binary: Bool, compress: Bool)
    /// The user pings.
    case ping
    /// The user closes the socket with `code`.
    case close(code: UInt16)
    /// The user's task is cancelled.
    case cancel
    /// The user reads what arrived (messages, pongs, the ending).
    case consume
    /// The peer sends a message in `fragments` frames (compressed when deflate was agreed and `compress`).
    case peerSend(size: Int, fragments: Int, binary: Bool, compress: Bool)
    case peerPing
    /// The peer starts the close handshake (`nil`: an empty close frame).
    case peerClose(code: UInt16?)
    /// The peer breaks a rule.
    case peerMisbehaves(Misbehaviour)
    /// The peer's TCP goes: a FIN behind what it sent, or a reset that loses what is in flight.
    case peerDrops(reset: Bool)
    /// The peer stops (or starts again) reading: nothing more is acknowledged meanwhile.
    case peerReads(Bool)
    /// The client's socket takes up to `bytes` of its output onto the wire.
    case toWire(bytes: Int)
    /// Up to `bytes` on the wire reach the peer's TCP (acknowledged) and the peer reads them.
    case toPeer(bytes: Int)
    /// Up to `bytes` of the peer's output reach the client.
    case toClient(bytes: Int)
    /// Virtual time passes; timers fire on the way.
    case advance(milliseconds: Int)
    /// How the peer answers the next upgrade request.
    case nextAnswer(Answer)

    /// A frame RFC 6455 forbids a server to send, and the close code the client must fail with.
    public enum Misbehaviour: CaseIterable, Equatable, Sendable {
        case continuationWithoutStart, maskedFrame, reservedBits, controlTooLong, fragmentedControl
        case invalidUTF8AcrossFragments, invalidCloseCode, reservedOpcode, newMessageInsideFragmented
        case tooManyFragments, tooBig
    }

    /// The peer's answer to an upgrade request.
    public enum Answer: CaseIterable, Equatable, Sendable {
        case accept, acceptWithoutDeflate, reject401, reject503, badAccept, dropBeforeAnswer
    }

    public var description: String {
        switch self {
        case .send(let size, let binary, let compress): "send(\(size)\(binary ? ", binary" : "")\(compress ? "" : ", uncompressed"))"
        case .ping: "ping"
        case .close(let code): "close(\(code))"
        case .cancel: "cancel"
        case .consume: "consume"
        case .peerSend(let size, let fragments, let binary, let compress):
            "peerSend(\(size) in \(fragments)\(binary ? ", binary" : "")\(compress ? ", deflated" : ""))"
        case .peerPing: "peerPing"
        case .peerClose(let code): "peerClose(\(code.map(String.init) ?? "empty"))"
        case .peerMisbehaves(let misbehaviour): "peerMisbehaves(\(misbehaviour))"
        case .peerDrops(let reset): reset ? "peerResets" : "peerFIN"
        case .peerReads(let reads): reads ? "peerReads" : "peerStopsReading"
        case .toWire(let bytes): "toWire(\(bytes))"
        case .toPeer(let bytes): "toPeer(\(bytes))"
        case .toClient(let bytes): "toClient(\(bytes))"
        case .advance(let milliseconds): "advance(\(milliseconds) ms)"
        case .nextAnswer(let answer): "nextAnswer(\(answer))"
        }
    }
}

extension SimulationEvent {
    /// The schedule of `seed`: `count` events, network moves weighted so bytes flow.
    public static func schedule(seed: UInt64, count: Int) -> [SimulationEvent] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in make(&random) }
    }

    /// A byte count: often 1-16 (every split), sometimes large.
    private static func byteCount(_ random: inout SplitMix64) -> Int {
        switch random.below(4) {
        case 0: 1 + random.below(4)
        case 1: 1 + random.below(40)
        default: 1 + random.below(4000)
        }
    }

    private static func make(_ random: inout SplitMix64) -> SimulationEvent {
        switch random.below(100) {
        case 0..<15: .send(size: random.chance(10) ? 100 + random.below(900) : 8 + random.below(40),
                           binary: random.chance(30), compress: !random.chance(20))
        case 15..<17: .ping
        case 17..<19: .close(code: random.chance(50) ? 1000 : 4000 + UInt16(random.below(10)))
        case 19: .cancel
        case 20..<24: .consume
        case 24..<32: .peerSend(size: random.chance(10) ? 300 + random.below(800) : random.below(60),
                                fragments: 1 + random.below(Simulation.maxFragments), binary: random.chance(30), compress: random.chance(60))
        case 32..<34: .peerPing
        case 34..<36: .peerClose(code: random.chance(15) ? nil : random.chance(30) ? 1001 : 4100 + UInt16(random.below(100)))
        case 36..<38: .peerMisbehaves(Misbehaviour.allCases[random.below(Misbehaviour.allCases.count)])
        case 38..<40: .peerDrops(reset: random.chance(50))
        case 40..<42: .peerReads(random.chance(50))
        case 42..<60: .toWire(bytes: byteCount(&random))
        case 60..<76: .toPeer(bytes: byteCount(&random))
        case 76..<92: .toClient(bytes: byteCount(&random))
        case 92..<97: .advance(milliseconds: random.chance(50) ? random.below(300) : random.below(12_000))
        default: .nextAnswer(random.chance(50) ? .accept : Answer.allCases[random.below(Answer.allCases.count)])
        }
    }
}
