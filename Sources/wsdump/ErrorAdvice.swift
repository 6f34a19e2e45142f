import WebSocketStreams

/// An error's line for wsdump's users: the SDK's sentence, then the wsdump flag that does
/// what it advises (`--max-message-size` or `--stream` for a message too large,
/// `--ca-file` for an untrusted CA).
enum ErrorAdvice {
    /// `error` described, with the flag to use when one helps.
    static func line(for error: WebSocketError, options: SessionOptions) -> String {
        guard let advice = advice(for: error, streams: options.streamsMessages) else { return error.description }
        return error.description + "; wsdump: " + advice
    }

    /// The flags that help with `error`, in words; `nil` when none does.
    static func advice(for error: WebSocketError, streams: Bool) -> String? {
        switch error.code {
        case .messageTooLarge where (error.reason ?? "").contains("maxFragmentsPerMessage"):
            return nil
        case .messageTooLarge:
            return streams
                ? "raise the limit with --max-message-size BYTES"
                : "raise the limit with --max-message-size BYTES, or print messages piece by piece with --stream"
        case .tlsFailure where (error.reason ?? "").contains("not signed by a trusted CA"):
            return "trust its CA with --ca-file PATH (or skip verification with -n)"
        default:
            return nil
        }
    }
}
