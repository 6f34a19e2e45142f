import ArgumentParser

/// `wsdump`'s Sending options: what is sent, and when input ends.
struct SendingOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "Text to send once, right after connecting.")
    var text: String?

    @Option(name: .customLong("eof-wait"), help: ArgumentHelp("Seconds to wait after input ends before closing.", valueName: "seconds"))
    var eofWait: Double = 0

    @Flag(help: "Send input lines as binary messages.")
    var binary = false

    @Option(help: ArgumentHelp("Send this file as one binary message after connecting (with a progress bar on a terminal).", valueName: "path"))
    var file: String?

    @Option(name: .customLong("send-file"), help: ArgumentHelp(
        "Like --file, but read and sent in pieces as one message, so a file of any size costs no more memory than a few pieces.",
        valueName: "path"))
    var sendFile: String?

    @Flag(help: "Do not read standard input: print what the server sends until it closes, --count, --timeout or Ctrl-C (-t and --file are still sent).")
    var listen = false
}
