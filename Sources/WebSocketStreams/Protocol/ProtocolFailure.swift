/// Why this side fails a connection (RFC 6455 section 7.1.7): the close code it sends
/// (1002 protocol error, 1007 invalid payload data, 1009 too big) and a reason for people.
package struct ProtocolFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package var code: WebSocketCloseCode
    package var reason: String
    /// Whether the limit broken is the number of fragments, not the size (both close with 1009).
    package var exceedsFragmentLimit = false

    package var description: String { "\(code.rawValue): \(reason)" }

    static func protocolError(_ reason: String) -> ProtocolFailure {
        ProtocolFailure(code: .protocolError, reason: reason)
    }

    static func invalidPayload(_ reason: String) -> ProtocolFailure {
        ProtocolFailure(code: .invalidFramePayloadData, reason: reason)
    }

    static func tooManyFragments(limit: Int) -> ProtocolFailure {
        ProtocolFailure(
            code: .messageTooBig, reason: "message in more than \(limit) fragments (maxFragmentsPerMessage)",
            exceedsFragmentLimit: true)
    }

    static func tooBig(limit: Int) -> ProtocolFailure {
        ProtocolFailure(code: .messageTooBig, reason: "message larger than \(limit) bytes")
    }
}
