import ArgumentParser

/// `wsdump`'s Output options: how what arrives (and what is sent) is shown.
struct OutputOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "-v: show each message's type and sent messages; -vv (or -v 2): also the handshake headers and ping, pong and close frames.")
    var verbose: Int

    @Flag(name: .shortAndLong, help: "Print received messages without prefix, type or color, and read input lines without the line editor.")
    var raw = false

    @Flag(help: "Print the seconds since connecting before each received message.")
    var timings = false

    @Flag(help: "Print each received message as it arrives, piece by piece, instead of holding it whole: text as it comes; binary as its size (with -r, its bytes).")
    var stream = false

    @Flag(help: "Show binary messages as a full hex dump (default: the size and the first 16 bytes).")
    var hex = false

    @Flag(help: "Pretty-print text messages that are JSON objects or arrays.")
    var json = false

    @Flag(help: "Write one JSON object per event (time, direction, type, data or base64, code, reason, error) on standard output.")
    var jsonl = false

    @Flag(name: .customLong("show-secrets"), help: "Show Authorization, Cookie and other secret values in -v output instead of <redacted>.")
    var showSecrets = false
}
