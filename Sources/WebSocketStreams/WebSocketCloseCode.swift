import WebSocketCore

/// The status code of a WebSocket close frame (RFC 6455 section 7.4).
///
/// Well-known codes are static members; any code in 3000-4999 (registered and
/// private-use codes) can be made with `WebSocketCloseCode(rawValue:)` or an
/// integer literal:
///
/// ```swift
/// await connection.close(code: .normalClosure, reason: "bye")
/// await connection.close(code: 4001, reason: "session expired")
/// ```
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, ExpressibleByIntegerLiteral {
    /// The code as sent on the wire.
    public var rawValue: UInt16

    /// Wraps any code. Codes outside 1000-4999 are representable but never valid on the wire.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Wraps an integer literal, e.g. `4000`.
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    /// 1000: the purpose of the connection has been fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: an endpoint is going away: a server shutting down, or a client that stopped reading.
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: an endpoint received a frame that violates the protocol.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: an endpoint received a type of data it cannot accept.
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: the close frame carried no status code. Never sent on the wire.
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: the connection ended without a close frame (TCP loss). Never sent on the wire.
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: a message's data was inconsistent with its type, e.g. invalid UTF-8 in a text message.
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message violated the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message was too big to process.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the client expected the server to negotiate an extension it did not.
    public static let mandatoryExtensionMissing = WebSocketCloseCode(rawValue: 1010)
    /// 1011: the server hit an unexpected condition.
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)
    /// 1012: the service is restarting.
    public static let serviceRestart = WebSocketCloseCode(rawValue: 1012)
    /// 1013: try again later (temporary server overload).
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)
    /// 1014: the server, acting as a gateway or proxy, got an invalid answer upstream.
    public static let badGateway = WebSocketCloseCode(rawValue: 1014)
    /// 1015: the TLS handshake failed. Never sent on the wire.
    public static let tlsHandshakeFailure = WebSocketCloseCode(rawValue: 1015)

    /// Whether this code may appear in a close frame, sent or received (1000-1003,
    /// 1007-1014 and 3000-4999). 1005, 1006 and 1015 only ever describe a connection's end;
    /// a peer that sends one of those, or an unassigned code, breaks the protocol.
    public var isValidInCloseFrame: Bool {
        CloseFrame.mayBeReceived(rawValue)
    }

    /// The former name of ``isValidInCloseFrame``.
    @available(*, deprecated, renamed: "isValidInCloseFrame")
    public var isSendable: Bool { isValidInCloseFrame }

    /// A short English name for well-known codes, `nil` for others.
    public var name: String? {
        switch rawValue {
        case 1000: "normal closure"
        case 1001: "going away"
        case 1002: "protocol error"
        case 1003: "unsupported data"
        case 1005: "no status received"
        case 1006: "abnormal closure"
        case 1007: "invalid frame payload data"
        case 1008: "policy violation"
        case 1009: "message too big"
        case 1010: "mandatory extension missing"
        case 1011: "internal server error"
        case 1012: "service restart"
        case 1013: "try again later"
        case 1014: "bad gateway"
        case 1015: "TLS handshake failure"
        case 3000...3999: "registered"
        case 4000...4999: "private use"
        default: nil
        }
    }
}

extension WebSocketCloseCode: CustomStringConvertible {
    /// The number and its name, e.g. `1000 (normal closure)`.
    public var description: String {
        if let name { "\(rawValue) (\(name))" } else { "\(rawValue)" }
    }
}

// The codec (WebSocketCore) carries close codes as the wire's UInt16; here they are read as
// the public type.
extension CloseFrame {
    /// The code, or `nil` for an empty close frame (reported to users as 1005).
    var code: WebSocketCloseCode? {
        get { wireCode.map(WebSocketCloseCode.init(rawValue:)) }
        set { wireCode = newValue?.rawValue }
    }

    init(code: WebSocketCloseCode?, reason: String = "") {
        self.init(wireCode: code?.rawValue, reason: reason)
    }
}

extension ProtocolFailure {
    /// The close code this side sends.
    var code: WebSocketCloseCode {
        get { WebSocketCloseCode(rawValue: wireCode) }
        set { wireCode = newValue.rawValue }
    }

    init(code: WebSocketCloseCode, reason: String, exceedsFragmentLimit: Bool = false) {
        self.init(wireCode: code.rawValue, reason: reason, exceedsFragmentLimit: exceedsFragmentLimit)
    }
}
