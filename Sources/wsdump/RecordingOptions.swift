import ArgumentParser

/// `wsdump`'s Recording options: writing the conversation down for `TestServer --replay`.
struct RecordingOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Record the conversation (every message both ways and the ending, with times) as JSON lines in this file, for `TestServer --replay`.",
        valueName: "path"))
    var record: String?
}
