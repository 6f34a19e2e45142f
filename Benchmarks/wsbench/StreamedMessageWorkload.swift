import BenchmarkKit
import FoundationEssentials
import WebSocketStreams

/// W8: one message of `--size` bytes (default 1 GiB) each way. It is sent with
/// `send(streaming:)` in 64 KiB pieces to `/frame-echo`, which echoes every frame as it
/// arrives, while the echo is read through `messageStreams` on a connection that streams
/// its messages. Neither side ever holds the message: the figure that matters besides the
/// rate is how far the peak resident size grew.
enum StreamedMessageWorkload {
    static let pieceSize = 64 * 1024

    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        var configuration = parameters.configuration
        configuration.streamsIncomingMessages = true
        let clock = ContinuousClock()
        let connection: WebSocket
        do {
            connection = try await WebSocket.connect(to: parameters.url, configuration: configuration, eventLoop: parameters.nextLoop())
        } catch {
            return failedToConnect(parameters, error)
        }
        let total = parameters.size
        let residentBefore = ProcessResources.residentKilobytes()
        let peakWasReset = ProcessResources.resetPeakResident()
        var received = 0
        var failure: String?
        let start = clock.now
        async let sent: Void = connection.send(streaming: RepeatedPieces(total: total, pieceSize: pieceSize), as: .binary)
        var messages = connection.messageStreams.makeAsyncIterator()
        if let message = await messages.next() {
            do {
                for try await piece in message { received += piece.count }
            } catch {
                failure = "\(error)"
            }
        } else {
            failure = endedEarly(connection)
        }
        let elapsed = clock.now - start
        do { try await sent } catch { failure = failure ?? "send: \(error)" }
        let peak = peakWasReset ? ProcessResources.peakResidentKilobytes() : 0
        await connection.close()

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: failure == nil && received == total,
            count: 1, completed: received == total ? 1 : 0, elapsed: elapsed)
        builder.add("message_mb", Double(total) / 1e6)
        builder.add("mb_per_s", elapsed.seconds > 0 ? Double(received) / elapsed.seconds / 1e6 : 0)
        if peakWasReset { builder.add("peak_rss_growth_mb", Double(max(0, peak - residentBefore)) / 1024) }
        if let failure { builder.fail(failure) } else if received != total { builder.fail("echo was \(received) of \(total) bytes") }
        return builder.report
    }

    /// `total` bytes as pieces of one shared buffer: the sender allocates nothing per piece.
    struct RepeatedPieces: AsyncSequence, Sendable {
        let total: Int
        let pieceSize: Int

        func makeAsyncIterator() -> Iterator {
            Iterator(remaining: total, piece: Data(repeating: 0x62, count: pieceSize))
        }

        struct Iterator: AsyncIteratorProtocol {
            var remaining: Int
            let piece: Data

            mutating func next() async -> Data? {
                guard remaining > 0 else { return nil }
                let count = Swift.min(remaining, piece.count)
                remaining -= count
                return count == piece.count ? piece : piece.prefix(count)
            }
        }
    }
}
