import BenchmarkKit
import FoundationEssentials
import WebSocketStreams

/// W2 and W3: binary messages echoed by the server, with up to `inflight` of them sent
/// and not yet echoed (W2: 64 x 1 KiB; W3: one 4 MiB message at a time).
///
/// The receiving loop sends the next message as each echo arrives, so the window stays
/// full without a second task; the payload is one `Data` shared by every message.
enum EchoWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let clock = ContinuousClock()
        let connection: WebSocket
        do {
            connection = try await WebSocket.connect(to: parameters.url, configuration: parameters.configuration, eventLoop: parameters.nextLoop())
        } catch {
            return failedToConnect(parameters, error)
        }
        let payload = Data(repeating: 0x61, count: parameters.size)
        // --json: a feed of distinct JSON texts (trades), for what compression saves on one.
        let feed = parameters.sendsJSON ? JSONFeed.messages(count: 1000, size: parameters.size) : []
        func next(_ index: Int) -> WebSocketMessage {
            feed.isEmpty ? .binary(payload) : .text(feed[index % feed.count])
        }
        let window = max(1, parameters.inflight)
        var messages = connection.messages.makeAsyncIterator()
        var sent = 0
        var completed = 0
        var receivedBytes = 0
        var failure: String?
        let start = clock.now
        do {
            while sent < min(window, parameters.count) {
                try await connection.send(next(sent))
                sent += 1
            }
            while completed < parameters.count {
                guard let message = await messages.next() else {
                    failure = endedEarly(connection)
                    break
                }
                completed += 1
                receivedBytes += message.byteCount
                if sent < parameters.count {
                    try await connection.send(next(sent))
                    sent += 1
                }
            }
        } catch {
            failure = "\(error)"
        }
        let elapsed = clock.now - start
        await connection.close()

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: completed == parameters.count,
            count: parameters.count, completed: completed, elapsed: elapsed)
        builder.addThroughput(messages: completed, bytes: receivedBytes)
        if let failure { builder.fail(failure) }
        return builder.report
    }
}
