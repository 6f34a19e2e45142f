import Dispatch
import Glibc

/// Turns SIGINT, SIGTERM and SIGHUP into calls of a handler, without interrupting anything.
///
/// The signals' default actions are switched off and Dispatch sources watch them instead,
/// so the session can close with 1001 and restore the terminal before exiting. SIGPIPE is
/// ignored: a closed output pipe shows up as a write error instead.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    /// Starts watching; `handler` runs on a private queue and must return quickly.
    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "wsdump.signals")
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
