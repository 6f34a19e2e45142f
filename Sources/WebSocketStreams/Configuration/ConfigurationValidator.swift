import FoundationEssentials

/// Checks a ``WebSocketConfiguration`` before anything is sent, so mistakes surface as
/// ``WebSocketError/invalidConfiguration(_:)`` with the reason instead of a malformed request.
enum ConfigurationValidator {
    /// Headers the SDK sets itself.
    static let reservedHeaders: Set<String> = [
        "host", "upgrade", "connection", "origin", "sec-websocket-key", "sec-websocket-version",
        "sec-websocket-protocol", "sec-websocket-extensions", "sec-websocket-accept", "content-length",
    ]

    static func validate(_ configuration: WebSocketConfiguration) throws(WebSocketError) {
        try RequestInjectionGuard.check(configuration)
        for (name, value) in configuration.headers {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                throw .invalidConfiguration("header name '\(name)' must be a non-empty HTTP token")
            }
            guard !reservedHeaders.contains(name.lowercased()) else {
                throw .invalidConfiguration("header '\(name)' is set by the SDK; use the configuration's own setting")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .invalidConfiguration("the value of header '\(name)' contains a line break")
            }
        }
        for subprotocol in configuration.subprotocols {
            guard !subprotocol.isEmpty, subprotocol.utf8.allSatisfy(isTokenByte) else {
                throw .invalidConfiguration("subprotocol '\(subprotocol)' must be a non-empty HTTP token")
            }
        }
        if let origin = configuration.origin, origin.utf8.contains(where: { $0 < 0x20 }) {
            throw .invalidConfiguration("the origin contains a control character")
        }
        guard configuration.connectTimeout > .zero else {
            throw .invalidConfiguration("connectTimeout must be positive")
        }
        if let interval = configuration.pingInterval, interval <= .zero {
            throw .invalidConfiguration("pingInterval must be positive, or nil to disable pings")
        }
        guard configuration.pongTimeout > .zero else {
            throw .invalidConfiguration("pongTimeout must be positive")
        }
        guard configuration.maxMessageSize > 0, configuration.maxBufferedMessages > 0,
              configuration.maxBufferedBytes > 0, configuration.maxBufferedSendBytes > 0 else {
            throw .invalidConfiguration("message and buffer limits must be positive")
        }
        guard configuration.connectionAttemptDelay >= .zero else {
            throw .invalidConfiguration("connectionAttemptDelay must not be negative")
        }
        if let heartbeat = configuration.heartbeat, heartbeat.interval <= .zero || heartbeat.timeout <= .zero {
            throw .invalidConfiguration("heartbeat.interval and heartbeat.timeout must be positive")
        }
        if let keepalive = configuration.tcpKeepalive, keepalive < .seconds(3) {
            throw .invalidConfiguration("tcpKeepalive must be at least 3 seconds (probes go every third of it, in whole seconds)")
        }
        if let timeout = configuration.tcpUserTimeout, timeout < .milliseconds(1) {
            throw .invalidConfiguration("tcpUserTimeout must be at least 1 millisecond")
        }
        try validate(configuration.compression)
        guard configuration.maxFragmentsPerMessage > 0 else {
            throw .invalidConfiguration("maxFragmentsPerMessage must be positive")
        }
        if let limit = configuration.maxStreamedMessageSize, limit <= 0 {
            throw .invalidConfiguration("maxStreamedMessageSize must be positive (or nil for no limit)")
        }
        guard configuration.maxRedirects >= 0 else {
            throw .invalidConfiguration("maxRedirects must not be negative")
        }
        if let local = configuration.localAddress, SocketConnector.addressBytes(local) == nil {
            throw .invalidConfiguration("localAddress '\(local)' is not a numeric IPv4 or IPv6 address")
        }
        let tls = configuration.tls
        if (tls.clientCertificateFile == nil) != (tls.clientKeyFile == nil) {
            throw .invalidConfiguration("clientCertificateFile and clientKeyFile must be given together")
        }
        if (tls.clientCertificatePEM == nil) != (tls.clientKeyPEM == nil) {
            throw .invalidConfiguration("tls.clientCertificatePEM and tls.clientKeyPEM must be given together")
        }
        if tls.clientCertificatePEM != nil, tls.clientCertificateFile != nil {
            throw .invalidConfiguration("give the client certificate once: as files (clientCertificateFile) or as PEM text (clientCertificatePEM)")
        }
        for pin in tls.pinnedPublicKeys where !Self.isPublicKeyPin(pin) {
            throw .invalidConfiguration(
                "tls.pinnedPublicKeys: '\(pin)' is not a pin; write sha256/ and the base64 SHA-256 of the key's DER SubjectPublicKeyInfo (44 characters)")
        }
        if let name = tls.serverName, name.isEmpty || name.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "\0" }) {
            throw .invalidConfiguration("tls.serverName '\(name)' is not a host name")
        }
    }

    /// Whether `pin` is `sha256/` followed by the base64 of 32 bytes.
    static func isPublicKeyPin(_ pin: String) -> Bool {
        guard pin.hasPrefix("sha256/"), let digest = Data(base64Encoded: String(pin.dropFirst(7))) else { return false }
        return digest.count == 32
    }

    /// RFC 7230 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The compression settings zlib and RFC 7692 accept.
    private static func validate(_ compression: WebSocketCompression) throws(WebSocketError) {
        for (name, bits) in [("clientMaxWindowBits", compression.clientMaxWindowBits),
                             ("serverMaxWindowBits", compression.serverMaxWindowBits)] {
            if let bits, !(8...15).contains(bits) {
                throw .invalidConfiguration("compression.\(name) must be 8 to 15 (this one is \(bits))")
            }
        }
        guard (0...9).contains(compression.level) else {
            throw .invalidConfiguration("compression.level must be 0 to 9 (this one is \(compression.level))")
        }
        guard (1...9).contains(compression.memoryLevel) else {
            throw .invalidConfiguration("compression.memoryLevel must be 1 to 9 (this one is \(compression.memoryLevel))")
        }
        guard compression.threshold >= 0 else {
            throw .invalidConfiguration("compression.threshold must not be negative")
        }
    }
}
