import Foundation
import WebSocketStreams

/// Sends a file as one binary message (`--file`), drawing a progress bar in the console's
/// footer while it is written when standard error is a terminal and the file is large.
struct FileUpload: Sendable {
    /// Files smaller than this are sent without a progress bar.
    static let progressThreshold = 256 * 1024

    /// Where to draw, or `nil` for no progress bar.
    var console: Console?
    /// How often the progress bar is redrawn.
    var refreshInterval: Duration = .milliseconds(100)

    /// Sends `data` as one binary message; with a progress bar, waits until it is written.
    ///
    /// - Parameter bytesQueuedBefore: Payload bytes sent on `link` before this file, so
    ///   the file is done once `link.writtenMessageBytes` reaches them plus its size.
    func send(_ data: Data, over link: any SessionLink, bytesQueuedBefore: Int) async throws {
        guard let console, data.count >= Self.progressThreshold else {
            try await link.send(.binary(data))
            return
        }
        let target = bytesQueuedBefore + data.count
        let progress = Task {
            while !Task.isCancelled {
                let done = link.writtenMessageBytes - bytesQueuedBefore
                console.setFooter(.init(descriptor: STDERR_FILENO, rendered: ProgressBar.render(done: done, total: data.count)))
                if link.writtenMessageBytes >= target || !link.isOpen { break }
                try? await Task.sleep(for: refreshInterval)
            }
        }
        defer {
            progress.cancel()
            console.setFooter(nil)
        }
        try await link.send(.binary(data))
        await progress.value
    }

    /// Sends `pieces` (`size` bytes in all) as one binary message; with a progress bar
    /// for a large file, drawn as its pieces are written.
    func send(_ pieces: FilePieces, size: Int, over link: any SessionLink, bytesQueuedBefore: Int) async throws {
        guard let console, size >= Self.progressThreshold else {
            try await link.send(streaming: pieces)
            return
        }
        let progress = Task {
            while !Task.isCancelled {
                let done = link.writtenMessageBytes - bytesQueuedBefore
                console.setFooter(.init(descriptor: STDERR_FILENO, rendered: ProgressBar.render(done: done, total: size)))
                if done >= size || !link.isOpen { break }
                try? await Task.sleep(for: refreshInterval)
            }
        }
        defer {
            progress.cancel()
            console.setFooter(nil)
        }
        try await link.send(streaming: pieces)
        await progress.value
    }

    /// The contents of `path`, read on a thread of its own (file reads block).
    static func read(_ path: String) async throws -> Data {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let started = BlockingThread.run(name: "wsdump-file") {
                do {
                    continuation.resume(returning: try Data(contentsOf: URL(fileURLWithPath: path)))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            if !started { continuation.resume(throwing: CocoaError(.fileReadUnknown)) }
        }
    }
}
