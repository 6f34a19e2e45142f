import Foundation
import Synchronization
import WebSocketStreams

/// Sends, in order and on a task of its own, what the session hands it: messages, the
/// `--file` upload, and the final close (which so goes out after every queued message).
///
/// The session loop never waits for a send, so it keeps printing while a large message is
/// written or the connection applies backpressure.
final class OutgoingQueue: Sendable {
    /// One thing to send.
    enum Item: Sendable {
        /// A message; `fromInput` gives its credit back to the stdin reader once sent.
        case message(WebSocketMessage, fromInput: Bool)
        /// A file as one binary message.
        case file(path: String)
        /// The close frame.
        case close(code: WebSocketCloseCode, reason: String)
    }

    private let continuation: AsyncStream<Item>.Continuation
    private let sender: Task<Void, Never>
    /// Messages and files queued and not yet handed to the connection.
    private let pending: PendingCount

    /// Messages and files queued that the connection has not taken yet.
    var pendingCount: Int { pending.value.load(ordering: .relaxed) }

    /// A count shared with the sending task.
    private final class PendingCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Starts the sending task.
    ///
    /// - Parameters:
    ///   - link: Where to send.
    ///   - credits: Given back for each input line sent.
    ///   - upload: Sends `--file` uploads (drawing progress).
    ///   - post: Reports what is sent, failures and the end of an upload to the session.
    init(link: any SessionLink, credits: StandardInput.Credits, upload: FileUpload, post: @escaping @Sendable (SessionEvent) -> Void) {
        let (items, continuation) = AsyncStream<Item>.makeStream()
        self.continuation = continuation
        let pending = PendingCount()
        self.pending = pending
        sender = Task {
            var bytesQueued = 0
            for await item in items {
                switch item {
                case .message(let message, let fromInput):
                    post(.sending(message))
                    do {
                        try await link.send(message)
                        bytesQueued += message.byteCount
                    } catch {
                        post(.sendFailed("\(message) was not sent: \(error)"))
                    }
                    pending.value.subtract(1, ordering: .relaxed)
                    if fromInput { credits.giveBack() }
                case .file(let path):
                    do {
                        let data = try await FileUpload.read(path)
                        post(.sending(.binary(data)))
                        try await upload.send(data, over: link, bytesQueuedBefore: bytesQueued)
                        bytesQueued += data.count
                    } catch {
                        post(.sendFailed("\(path) was not sent: \(error)"))
                    }
                    pending.value.subtract(1, ordering: .relaxed)
                    post(.uploadFinished)
                case .close(let code, let reason):
                    await link.close(code: code, reason: reason)
                }
            }
        }
    }

    /// Queues `item` after everything queued before.
    func enqueue(_ item: Item) {
        if case .close = item {} else { pending.value.add(1, ordering: .relaxed) }
        continuation.yield(item)
    }

    /// Stops sending (the session is over: anything still queued has nowhere to go) and
    /// returns once the sending task has ended, so none outlives the session.
    func stop() async {
        cancel()
        await sender.value
    }

    /// Stops sending without waiting for a send or close under way to notice.
    func cancel() {
        continuation.finish()
        sender.cancel()
    }
}
