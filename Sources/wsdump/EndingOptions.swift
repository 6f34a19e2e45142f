import ArgumentParser

/// `wsdump`'s Ending options: when the session closes and how it exits.
struct EndingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Close with 1000 and exit after this many received messages.", valueName: "n"))
    var count: Int?

    @Option(name: .customLong("wait-replies"), help: ArgumentHelp(
        "When input ends, wait until this many messages have arrived in all before closing (for at most --eof-wait seconds, else 10).",
        valueName: "n"))
    var waitReplies: Int?

    @Flag(name: .customLong("require-reply"), help: "Exit with status 6 when no message was received.")
    var requireReply = false

    @Option(help: ArgumentHelp("Close with 1000 and exit with status 4 after this many seconds.", valueName: "seconds"))
    var timeout: Double?
}
