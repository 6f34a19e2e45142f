import WebSocketCore

/// Whether and how messages are compressed with permessage-deflate (RFC 7692).
///
/// It reads like the Bool it used to be: `configuration.compression = false` turns
/// compression off, `true` (the default) offers it with the settings below. For more
/// control, set the fields:
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// // Ask the server for a small window for its messages (it may ignore it).
/// configuration.compression.serverMaxWindowBits = 10
/// // Messages under 1 KiB go out as they are.
/// configuration.compression.threshold = 1024
/// ```
///
/// The defaults stay small with many connections: a connection holds zlib's state only while
/// it compresses or decompresses (``releasesMemoryWhenIdle``), and between messages keeps only
/// the window its context takeover needs, at most the bytes it sent (up to 4 KiB, with the
/// default 12-bit ``clientMaxWindowBits``) and received (up to the server's window). A
/// connection that has sent and received one 1 KiB message holds about 12 KB in all, against
/// 112 KB with zlib's state held at the old defaults (figures in <doc:Performance>).
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
    /// 2^bits bytes), offered as `client_max_window_bits=N`; the server may ask for less.
    /// 12 by default (4 KiB: on JSON messages of 1 KiB the wire bytes are within 1% of a
    /// 15-bit window's, and the window kept between messages is 8 times smaller). `nil`
    /// offers `client_max_window_bits` without a value: the server may pick, else 15.
    /// zlib has no 8-bit raw deflate: with 8, messages are sent uncompressed.
    public var clientMaxWindowBits: Int? = 12

    /// The largest window the server may compress with, in bits (8...15), offered as
    /// `server_max_window_bits=N`: the server needs less memory for this connection. A
    /// server may ignore it. `nil` (the default) does not ask.
    public var serverMaxWindowBits: Int?

    /// Whether this client starts every message with an empty window
    /// (`client_no_context_takeover`). Costs compression of repetitive messages; saves the
    /// window kept between messages (at most 2^``clientMaxWindowBits`` bytes).
    public var clientNoContextTakeover = false

    /// Whether to ask the server to start every message with an empty window
    /// (`server_no_context_takeover`). Saves the window kept between messages (at most the
    /// server's window, 32 KiB unless ``serverMaxWindowBits`` is honoured).
    public var serverNoContextTakeover = false

    /// Whether zlib's state is freed whenever a connection has nothing more to send, and once
    /// each read is used up between messages; `true` by default.
    ///
    /// With context takeover the window is the only context the next message needs: it is
    /// saved (at most the bytes the connection sent or received, capped at the window), and
    /// the next message's compressor or decompressor is primed with it. The bytes on the wire
    /// are exactly those of a state held throughout, and an idle connection holds a few KiB
    /// instead of zlib's state (262 KiB to compress with a 15-bit window and memory level 8,
    /// 38 KiB with 12 and 5; 40 KiB to decompress with a 15-bit window). Messages queued back
    /// to back share one state. The cost is re-creating the state for a message that follows
    /// an idle pause, a few microseconds (the Performance article measures it); `false` keeps
    /// the state for the connection's life, for a few connections that exchange compressed
    /// messages one at a time at a high rate.
    public var releasesMemoryWhenIdle = true

    /// zlib's compression level, 0 (store) to 9 (smallest); 6 by default.
    public var level = 6

    /// zlib's memory level, 1 to 9: its hash tables take 2^(memoryLevel + 9) bytes while a
    /// message is compressed (16 KiB at the default 5, 128 KiB at 8). On 1 KiB JSON messages 5
    /// compresses as well as 8 and is faster to set up; lower saves memory and compresses a
    /// little worse.
    public var memoryLevel = 5

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
    /// `permessage-deflate; client_max_window_bits=12`, or `off`.
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
