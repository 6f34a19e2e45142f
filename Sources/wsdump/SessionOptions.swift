import WebSocketStreams

/// Everything the command line decided, resolved for the ``Session``.
struct SessionOptions: Sendable {
    /// The `ws://` or `wss://` URL.
    var url: String
    /// Headers, subprotocols, origin, TLS, proxy, compression and keep-alive.
    var configuration: WebSocketConfiguration
    /// `-v` count: 1 shows message types and sent messages, 2 also the handshake and control frames.
    var verbosity = 0
    /// `-r`: received messages without prefix, type or color; no line editor.
    var raw = false
    /// `--timings`: seconds since connecting before each received message.
    var timings = false
    /// `--eof-wait`: how long to keep printing after standard input ends, before closing.
    var eofWait: Duration = .zero
    /// `-t`: sent once right after connecting.
    var initialText: String?
    /// `--file`: sent as one binary message after ``initialText``.
    var file: String?
    /// `--send-file`: sent as one binary message, read and sent in pieces.
    var streamedFile: String?
    /// `--stream`: received messages printed piece by piece as they arrive.
    var streamsMessages = false
    /// `--binary`: input lines are sent as binary messages.
    var sendsLinesAsBinary = false
    /// `--hex`: binary messages as a full hex dump.
    var hexDump = false
    /// `--json`: JSON text messages pretty-printed.
    var prettyJSON = false
    /// `--jsonl`: one JSON object per event on standard output.
    var jsonLines = false
    /// `--count`: close with 1000 after this many received messages.
    var count: Int?
    /// `--wait-replies`: at end of input, wait until this many messages have arrived in all.
    var waitReplies: Int?
    /// `--require-reply`: exit with ``ExitStatus/nothingReceived`` when no message arrived.
    var requireReply = false
    /// `--timeout`: the whole session's limit.
    var timeout: Duration?
    /// `--reconnect`: use a ``ReconnectingWebSocket``.
    var reconnect = false
    /// `--header-command`: run before every attempt for that attempt's extra headers.
    var headerCommand: HeaderCommand?
    /// `--listen`: standard input is not read; the session lasts until the server closes,
    /// `--count`, `--timeout` or a signal.
    var listens = false
    /// `--show-secrets`: no redaction in `-v` output.
    var showsSecrets = false
    /// `--record`: where the conversation is written for `TestServer --replay`.
    var recordPath: String?
}
