/// The permessage-deflate settings (RFC 7692) both sides agreed on in the opening handshake.
///
/// The client offers ``clientOffer``; the server answers with the parameters it accepts in
/// `Sec-WebSocket-Extensions`, and ``init(negotiating:)`` turns that answer into the settings
/// the connection compresses and decompresses with. Window sizes are in bits (8...15, an
/// LZ77 window of 2^bits bytes); "no context takeover" means that side starts every message
/// with an empty window.
package struct DeflateParameters: Sendable, Hashable {
    /// Whether this client must reset its compressor after every message.
    package var clientNoContextTakeover = false
    /// Whether the server resets its compressor after every message.
    package var serverNoContextTakeover = false
    /// The largest LZ77 window this client may compress with, in bits.
    package var clientMaxWindowBits = 15
    /// The largest LZ77 window the server compresses with, in bits.
    package var serverMaxWindowBits = 15

    /// The name of the extension, as registered with IANA.
    package static let extensionName = "permessage-deflate"

    /// Default settings: context takeover on both sides, 32 KiB windows.
    package init() {}

    /// Reads the server's `Sec-WebSocket-Extensions` response value (RFC 7692 section 7.1).
    ///
    /// The value must hold exactly one permessage-deflate element. Its parameters may be
    /// `server_no_context_takeover` and `client_no_context_takeover` (no value), and
    /// `server_max_window_bits` and `client_max_window_bits` (a value 8...15 in decimal
    /// without leading zeros, as a token or a quoted string), each at most once. Names are
    /// compared without regard to ASCII case; several header lines may be joined with commas.
    ///
    /// - Throws: ``Failure`` when the value breaks any of these rules.
    package init(negotiating extensionsHeader: String) throws(Failure) {
        let elements = try ExtensionsHeaderParser.parse(Array(extensionsHeader.utf8))
        var negotiated: [ExtensionsHeaderParser.Parameter]?
        for element in elements {
            guard element.name.lowercased() == Self.extensionName else {
                throw .unexpectedExtension(element.name)
            }
            guard negotiated == nil else { throw .repeatedExtension }
            negotiated = element.parameters
        }
        guard let negotiated else { throw .missingExtension }

        var seen = Set<String>()
        for parameter in negotiated {
            let name = parameter.name.lowercased()
            guard seen.insert(name).inserted else { throw .duplicateParameter(parameter.name) }
            switch name {
            case "server_no_context_takeover":
                guard parameter.value == nil else { throw .unexpectedValue(parameter: parameter.name) }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard parameter.value == nil else { throw .unexpectedValue(parameter: parameter.name) }
                clientNoContextTakeover = true
            case "server_max_window_bits":
                serverMaxWindowBits = try Self.windowBits(of: parameter)
            case "client_max_window_bits":
                clientMaxWindowBits = try Self.windowBits(of: parameter)
            default:
                throw .unknownParameter(parameter.name)
            }
        }
    }

    /// Reads the server's answer and settles it with `offer` (see ``DeflateOffer/settle(_:)``).
    package init(negotiating extensionsHeader: String, offer: DeflateOffer) throws(Failure) {
        self = offer.settle(try DeflateParameters(negotiating: extensionsHeader))
    }

    /// The window size a `*_max_window_bits` parameter carries: 1*DIGIT, no leading zero, 8...15.
    private static func windowBits(of parameter: ExtensionsHeaderParser.Parameter) throws(Failure) -> Int {
        guard let value = parameter.value else { throw .missingValue(parameter: parameter.name) }
        let digits = Array(value.utf8)
        guard !digits.isEmpty, digits.count <= 2, digits.first != UInt8(ascii: "0"),
              digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let bits = Int(value), (8...15).contains(bits)
        else { throw .invalidValue(parameter: parameter.name, value: value) }
        return bits
    }

    /// Why a server's permessage-deflate response cannot be accepted; the connection fails.
    package enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The header does not follow the `Sec-WebSocket-Extensions` grammar; the detail says where.
        case malformed(String)
        /// The header names no extension at all.
        case missingExtension
        /// permessage-deflate appears more than once (RFC 7692 section 5: a response holds one).
        case repeatedExtension
        /// An extension other than permessage-deflate, which this client never offers.
        case unexpectedExtension(String)
        /// A parameter RFC 7692 does not define.
        case unknownParameter(String)
        /// A parameter that appears twice.
        case duplicateParameter(String)
        /// A `*_no_context_takeover` parameter that carries a value.
        case unexpectedValue(parameter: String)
        /// A `*_max_window_bits` parameter without the value a response must carry.
        case missingValue(parameter: String)
        /// A `*_max_window_bits` value that is not a decimal 8...15 without leading zeros.
        case invalidValue(parameter: String, value: String)

        package var description: String {
            switch self {
            case .malformed(let detail): "permessage-deflate: malformed Sec-WebSocket-Extensions: \(detail)"
            case .missingExtension: "permessage-deflate: the response names no extension"
            case .repeatedExtension: "permessage-deflate: the response accepts the extension more than once"
            case .unexpectedExtension(let name): "permessage-deflate: unexpected extension '\(name)'"
            case .unknownParameter(let name): "permessage-deflate: unknown parameter '\(name)'"
            case .duplicateParameter(let name): "permessage-deflate: duplicate parameter '\(name)'"
            case .unexpectedValue(let name): "permessage-deflate: parameter '\(name)' takes no value"
            case .missingValue(let name): "permessage-deflate: parameter '\(name)' needs a value"
            case .invalidValue(let name, let value):
                "permessage-deflate: invalid value '\(value)' for '\(name)' (expected 8 to 15)"
            }
        }
    }
}

extension DeflateParameters {
    /// Splits a `Sec-WebSocket-Extensions` value into extensions and their parameters
    /// (RFC 6455 section 9.1, with the list, token and quoted-string rules of RFC 9110).
    ///
    /// Grammar: `1#( token *( OWS ";" OWS token [ OWS "=" OWS ( token / quoted-string ) ] ) )`.
    /// Empty list elements (`a, , b`) are skipped as RFC 9110 section 5.6.1 allows. Quoted
    /// values are returned unescaped.
    fileprivate struct ExtensionsHeaderParser {
        /// One `name[=value]` parameter of an extension.
        struct Parameter {
            var name: String
            var value: String?
        }

        /// One extension of the list with its parameters in order.
        struct Element {
            var name: String
            var parameters: [Parameter]
        }

        private let bytes: [UInt8]
        private var index = 0

        private init(bytes: [UInt8]) { self.bytes = bytes }

        /// The extensions of a header value, in order.
        static func parse(_ bytes: [UInt8]) throws(DeflateParameters.Failure) -> [Element] {
            var parser = ExtensionsHeaderParser(bytes: bytes)
            return try parser.parseList()
        }

        private mutating func parseList() throws(DeflateParameters.Failure) -> [Element] {
            var elements: [Element] = []
            while true {
                skipWhitespace()
                guard let byte = peek() else { return elements }
                if byte == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                elements.append(try parseElement())
                skipWhitespace()
                guard let separator = peek() else { return elements }
                guard separator == UInt8(ascii: ",") else { throw unexpectedByte() }
                index += 1
            }
        }

        private mutating func parseElement() throws(DeflateParameters.Failure) -> Element {
            var element = Element(name: try parseToken(what: "extension name"), parameters: [])
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: ";") else { return element }
                index += 1
                skipWhitespace()
                var parameter = Parameter(name: try parseToken(what: "parameter name"), value: nil)
                skipWhitespace()
                if peek() == UInt8(ascii: "=") {
                    index += 1
                    skipWhitespace()
                    parameter.value = peek() == UInt8(ascii: "\"")
                        ? try parseQuotedString()
                        : try parseToken(what: "value of '\(parameter.name)'")
                }
                element.parameters.append(parameter)
            }
        }

        private mutating func parseToken(what: String) throws(DeflateParameters.Failure) -> String {
            let start = index
            while let byte = peek(), Self.isTokenCharacter(byte) { index += 1 }
            guard index > start else {
                throw .malformed(peek() == nil ? "\(what) missing at the end" : "\(what) expected at offset \(index)")
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        private mutating func parseQuotedString() throws(DeflateParameters.Failure) -> String {
            index += 1  // opening quote
            var content: [UInt8] = []
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: content, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek(), escaped == 0x09 || escaped >= 0x20, escaped != 0x7F else {
                        throw .malformed("bad escape in quoted string at offset \(index)")
                    }
                    content.append(escaped)
                    index += 1
                case 0x09, 0x20...0x7E, 0x80...0xFF:
                    content.append(byte)
                default:
                    throw .malformed("control character in quoted string at offset \(index - 1)")
                }
            }
            throw .malformed("unterminated quoted string")
        }

        private mutating func skipWhitespace() {
            while let byte = peek(), byte == UInt8(ascii: " ") || byte == 0x09 { index += 1 }
        }

        private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        private func unexpectedByte() -> DeflateParameters.Failure {
            .malformed("unexpected character at offset \(index)")
        }

        /// `tchar` of RFC 9110 section 5.6.2.
        private static func isTokenCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                 UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                true
            default:
                false
            }
        }
    }
}
