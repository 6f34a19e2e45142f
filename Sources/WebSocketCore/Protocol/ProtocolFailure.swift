/// Why this side fails a connection (RFC 6455 section 7.1.7): the close code it sends
/// (1002 protocol error, 1007 invalid payload data, 1009 too big) and a reason for people.
package struct ProtocolFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The close code to send, as on the wire (WebSocketStreams reads it as a
    /// `WebSocketCloseCode`: `code`).
    package var wireCode: UInt16
    package var reason: String
    /// Whether the limit broken is the number of fragments, not the size (both close with 1009).
    package var exceedsFragmentLimit = false

    package init(wireCode: UInt16, reason: String, exceedsFragmentLimit: Bool = false) {
        self.wireCode = wireCode
        self.reason = reason
        self.exceedsFragmentLimit = exceedsFragmentLimit
    }

    package var description: String { "\(wireCode): \(reason)" }

    /// 1002 (protocol error).
    package static func protocolError(_ reason: String) -> ProtocolFailure {
        ProtocolFailure(wireCode: 1002, reason: reason)
    }

    /// 1007 (invalid frame payload data).
    package static func invalidPayload(_ reason: String) -> ProtocolFailure {
        ProtocolFailure(wireCode: 1007, reason: reason)
    }

    /// 1009 (message too big), for the fragment limit.
    package static func tooManyFragments(limit: Int) -> ProtocolFailure {
        ProtocolFailure(
            wireCode: 1009, reason: "message in more than \(limit) fragments (maxFragmentsPerMessage)",
            exceedsFragmentLimit: true)
    }

    /// 1009 (message too big), for the size limit.
    package static func tooBig(limit: Int) -> ProtocolFailure {
        ProtocolFailure(wireCode: 1009, reason: "message larger than \(limit) bytes")
    }
}
