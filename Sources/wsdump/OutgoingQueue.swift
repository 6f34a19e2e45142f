import Foundation
import Synchronization
import SynchronizationSupport
import TaskLifetimes
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
        /// A file as one binary message, read and sent in pieces.
        case streamedFile(path: String)
        /// The close frame.
        case close(code: WebSocketCloseCode, reason: String)
    }

    private let continuation: AsyncStream<(id: Int, item: Item)>.Continuation
    /// Owns the sending task.
    private let sending = TaskBag()
    /// Complete once the sending task has returned.
    private let sent = Completion()
    private let ledger: Ledger

    /// The messages and files queued whose sending has not succeeded (yet), in order:
    /// waiting their turn, being sent, or failed. What is left here when the session ends
    /// was never delivered.
    var undelivered: [Item] { ledger.entries.withLock { $0.map(\.item) } }

    /// Messages and files queued and not delivered, by the number ``enqueue(_:)`` gave them.
    private final class Ledger: Sendable {
        let entries = AnnotatedMutex<[(id: Int, item: Item)]>([])
        let nextID = Atomic<Int>(0)

        func delivered(_ id: Int) {
            entries.withLock { $0.removeAll { $0.id == id } }
        }
    }

    /// Starts the sending task.
    ///
    /// - Parameters:
    ///   - link: Where to send.
    ///   - credits: Given back for each input line sent (or failed).
    ///   - upload: Sends `--file` uploads (drawing progress).
    ///   - post: Reports what is sent, failures and the end of an upload to the session.
    init(link: any SessionLink, credits: StandardInput.Credits, upload: FileUpload, post: @escaping @Sendable (SessionEvent) -> Void) {
        let (items, continuation) = AsyncStream<(id: Int, item: Item)>.makeStream()
        self.continuation = continuation
        let ledger = Ledger()
        self.ledger = ledger
        sending.addTask { [sent] in
            defer { sent.complete() }
            var bytesQueued = 0
            for await (id, item) in items {
                switch item {
                case .message(let message, let fromInput):
                    post(.sending(message))
                    do {
                        try await link.send(message)
                        bytesQueued += message.byteCount
                        ledger.delivered(id)
                    } catch {
                        post(.sendFailed("\(message) was not sent: \(error)"))
                    }
                    if fromInput { credits.giveBack() }
                case .file(let path):
                    do {
                        let data = try await FileUpload.read(path)
                        post(.sending(.binary(data)))
                        try await upload.send(data, over: link, bytesQueuedBefore: bytesQueued)
                        bytesQueued += data.count
                        ledger.delivered(id)
                    } catch {
                        post(.sendFailed("\(path) was not sent: \(error)"))
                    }
                    post(.uploadFinished)
                case .streamedFile(let path):
                    do {
                        let pieces = FilePieces(path: path)
                        let size = pieces.size ?? 0
                        post(.sendingFile(path: path, size: size))
                        try await upload.send(pieces, size: size, over: link, bytesQueuedBefore: bytesQueued)
                        bytesQueued += size
                        ledger.delivered(id)
                    } catch {
                        post(.sendFailed("\(path) was not sent: \(error)"))
                    }
                    post(.uploadFinished)
                case .close(let code, let reason):
                    await link.close(code: code, reason: reason)
                }
            }
        }
    }

    /// Queues `item` after everything queued before.
    func enqueue(_ item: Item) {
        let id = ledger.nextID.add(1, ordering: .relaxed).newValue
        if case .close = item {} else { ledger.entries.withLock { $0.append((id: id, item: item)) } }
        continuation.yield((id: id, item: item))
    }

    /// Stops sending (the session is over: anything still queued has nowhere to go) and
    /// returns once the sending task has ended, so none outlives the session.
    func stop() async {
        cancel()
        await sent.wait()
    }

    /// Stops sending without waiting for a send or close under way to notice.
    func cancel() {
        continuation.finish()
        sending.cancel()
    }
}
