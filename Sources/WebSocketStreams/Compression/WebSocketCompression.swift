import WebSocketCore

/// Whether and how messages are compressed with permessage-deflate (RFC 7692).
///
/// It reads like the Bool it used to be: `configuration.compression = false` turns
/// compression off, `true` (the default) offers it with the settings below. For more
/// control, set the fields:
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// // Many connections, each mostly idle: no window kept between messages (about 300 KiB
/// // of zlib state per connection is freed after each message), and a small window for
/// // the server's messages.
/// configuration.compression.clientNoContextTakeover = true
/// configuration.compression.serverMaxWindowBits = 10
/// // Messages under 1 KiB go out as they are.
/// configuration.compression.threshold = 1024
/// ```
///
/// The server decides: it may decline compression (messages then go uncompressed) or
/// accept it with other settings. An answer RFC 7692 section 7 does not allow (an extension
/// or a parameter that was not offered or that it does not define, one repeated, a window
/// outside 8...15, `server_max_window_bits` without a value) fails the connection with
/// ``WebSocketError/connectionFailed(_:)`` saying which rule it broke. Where leniency costs
/// nothing it is lenient: a client window larger than offered is answered by compressing
/// with the one offered, and a server that ignores ``serverMaxWindowBits`` or
/// ``serverNoContextTakeover`` is accepted (libwebsockets ignores the window): they only save
/// the server's memory, and this client decodes any window.
///
/// A message is compressed only when it is at least ``threshold`` bytes long and its `send`
/// did not opt out (``WebSocket/send(_:compress:)``): compress nothing a secret sits in
/// next to text an attacker chooses (CRIME, BREACH), nor bytes already compressed.
public struct WebSocketCompression: Sendable, Hashable, ExpressibleByBooleanLiteral, CustomStringConvertible {
    /// Whether permessage-deflate is offered at all.
    public var isEnabled: Bool

    /// The largest LZ77 window this client compresses with, in bits (8...15: a window of
    /// 2^bits bytes), offered as `client_max_window_bits=N`. `nil` (the default) offers
    /// `client_max_window_bits` without a value: the server may pick, else 15.
    /// zlib has no 8-bit raw deflate: with 8, messages are sent uncompressed.
    public var clientMaxWindowBits: Int?

    /// The largest window the server may compress with, in bits (8...15), offered as
    /// `server_max_window_bits=N`: the server needs less memory for this connection. A
    /// server may ignore it. `nil` (the default) does not ask.
    public var serverMaxWindowBits: Int?

    /// Whether this client starts every message with an empty window
    /// (`client_no_context_takeover`). Costs compression of repetitive messages, and frees
    /// the compressor's memory (about 300 KiB with a 15-bit window) between messages.
    public var clientNoContextTakeover = false

    /// Whether to ask the server to start every message with an empty window
    /// (`server_no_context_takeover`). The decompressor's memory (about 40 KiB) is then
    /// freed between messages.
    public var serverNoContextTakeover = false

    /// zlib's compression level, 0 (store) to 9 (smallest); 6 by default.
    public var level = 6

    /// zlib's memory level, 1 to 9: its hash tables take 2^(memoryLevel + 9) bytes
    /// (128 KiB at the default 8). Lower saves memory per connection and compresses a little worse.
    public var memoryLevel = 8

    /// Messages shorter than this, in bytes, are sent uncompressed. The default, 128, is where
    /// compressing a JSON feed stops costing more CPU than it saves bytes: zlib spends about
    /// 6 µs per message whatever its size, and saves about 0.8 bytes per byte of JSON (measured
    /// in the Performance article).
    public var threshold = 128

    /// Compression offered with every default setting.
    public static let enabled = WebSocketCompression(isEnabled: true)

    /// No compression offered.
    public static let disabled = WebSocketCompression(isEnabled: false)

    /// Compression offered (`true`) or not, with the default settings.
    public init(isEnabled: Bool = true) {
        self.isEnabled = isEnabled
    }

    /// `true` offers compression with the default settings; `false` offers none.
    public init(booleanLiteral value: Bool) {
        self.init(isEnabled: value)
    }

    /// The offer as it goes into `Sec-WebSocket-Extensions`, e.g.
    /// `permessage-deflate; client_max_window_bits`, or `off`.
    public var description: String {
        isEnabled ? DeflateOffer(self).headerValue : "off"
    }
}

extension DeflateOffer {
    /// The offer `compression` makes.
    init(_ compression: WebSocketCompression) {
        self.init()
        clientMaxWindowBits = compression.clientMaxWindowBits
        serverMaxWindowBits = compression.serverMaxWindowBits
        clientNoContextTakeover = compression.clientNoContextTakeover
        serverNoContextTakeover = compression.serverNoContextTakeover
    }
}
