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
        try await withProgress(on: console, total: data.count, over: link, bytesQueuedBefore: bytesQueuedBefore) {
            try await link.send(.binary(data))
        }
    }

    /// Sends `pieces` (`size` bytes in all) as one binary message; with a progress bar
    /// for a large file, drawn as its pieces are written.
    func send(_ pieces: FilePieces, size: Int, over link: any SessionLink, bytesQueuedBefore: Int) async throws {
        guard let console, size >= Self.progressThreshold else {
            try await link.send(streaming: pieces)
            return
        }
        try await withProgress(on: console, total: size, over: link, bytesQueuedBefore: bytesQueuedBefore) {
            try await link.send(streaming: pieces)
        }
    }

    /// Runs `send` while a child task draws the progress bar; once `send` has returned, waits
    /// until the bar is full (the file is written) or the link closed. If `send` throws, the
    /// bar stops at once.
    private func withProgress(
        on console: Console, total: Int, over link: any SessionLink, bytesQueuedBefore: Int,
        send: () async throws -> Void
    ) async throws {
        defer { console.setFooter(nil) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [refreshInterval] in
                while !Task.isCancelled {
                    let done = link.writtenMessageBytes - bytesQueuedBefore
                    console.setFooter(.init(descriptor: STDERR_FILENO, rendered: ProgressBar.render(done: done, total: total)))
                    if done >= total || !link.isOpen { break }
                    try? await Task.sleep(for: refreshInterval)
                }
            }
            try await send()
            try await group.waitForAll()
        }
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
