import Synchronization

/// A notification: a name and a text, like a tiny `Notification`.
struct Note: Sendable {
    let name: String
    let text: String
}

/// A NotificationCenter-like broadcaster: every subscriber gets its own stream.
///
/// A subscription ends when its iterating task is cancelled: the stream's
/// `onTermination` removes the subscriber.
final class NotificationHub: Sendable {
    private struct Subscribers {
        var lastID: UInt64 = 0
        var byID: [UInt64: (name: String, continuation: AsyncStream<Note>.Continuation)] = [:]
    }

    private let subscribers = Mutex(Subscribers())

    /// The number of live subscriptions.
    var subscriberCount: Int { subscribers.withLock { $0.byID.count } }

    /// A never-ending stream of the notes posted under `name`.
    func notifications(named name: String) -> AsyncStream<Note> {
        let (stream, continuation) = AsyncStream<Note>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = subscribers.withLock { subscribers in
            subscribers.lastID += 1
            subscribers.byID[subscribers.lastID] = (name, continuation)
            return subscribers.lastID
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { _ = $0.byID.removeValue(forKey: id) }
        }
        return stream
    }

    /// Delivers `note` to every subscriber of its name.
    func post(_ note: Note) {
        let receivers = subscribers.withLock { subscribers in
            subscribers.byID.values.filter { $0.name == note.name }.map(\.continuation)
        }
        // Yield outside the lock.
        for receiver in receivers { receiver.yield(note) }
    }
}
