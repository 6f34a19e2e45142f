/// The invariants the simulator checks after every step, and how often each was checked.
public enum Invariant: Int, CaseIterable, Sendable, CustomStringConvertible {
    case deliveredOnceInOrder
    case deliveredOrReportedUnsent
    case endsExactlyOnce
    case validEndingWithCloseHandshake
    case closeCodeEchoed
    case nothingArmedAfterEnding
    case queuesWithinLimits
    case peerSeesOnlyLegalFrames
    case brokenRuleFailsConnection
    case finishesInBoundedTime

    public var description: String {
        switch self {
        case .deliveredOnceInOrder: "every message reaches the peer at most once, in order"
        case .deliveredOrReportedUnsent: "every accepted message is delivered or reported unsent, never both"
        case .endsExactlyOnce: "each connection ends exactly once"
        case .validEndingWithCloseHandshake: "each ending has a valid code, backed by a close frame (RFC 6455 7)"
        case .closeCodeEchoed: "the answer to the peer's close echoes its code (RFC 6455 5.5.1)"
        case .nothingArmedAfterEnding: "nothing is armed or written after the ending"
        case .queuesWithinLimits: "queues stay within their limits"
        case .peerSeesOnlyLegalFrames: "the peer sees only frames RFC 6455 allows a client"
        case .brokenRuleFailsConnection: "a frame breaking a rule fails the connection"
        case .finishesInBoundedTime: "a close finishes in bounded time"
        }
    }
}

/// How many times each invariant was checked.
public struct InvariantTally: Sendable {
    public var counts = [Int](repeating: 0, count: Invariant.allCases.count)
    public var steps = 0

    public init() {}

    mutating func checked(_ invariant: Invariant) { counts[invariant.rawValue] += 1 }

    public mutating func add(_ other: InvariantTally) {
        for index in counts.indices { counts[index] += other.counts[index] }
        steps += other.steps
    }
}

/// A broken invariant: which, and what happened.
public struct InvariantViolation: Error, Sendable, CustomStringConvertible {
    public var invariant: Invariant
    public var detail: String
    public var description: String { "\(invariant): \(detail)" }
}
