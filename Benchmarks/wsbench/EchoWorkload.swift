import BenchmarkKit
import FoundationEssentials
import WebSocketStreams

/// W2 and W3: binary messages echoed by the server, with up to `inflight` of them sent
/// and not yet echoed (W2: 64 x 1 KiB; W3: one 4 MiB message at a time).
///
/// The receiving loop sends the next message as each echo arrives, so the window stays
/// full without a second task; the payload is one `Data` shared by every message. With
/// `--json`, also the TCP payload bytes per message each way and the CPU per message.
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
        let wireBefore = ProcessResources.tcpPayloadBytes()
        let cpuBefore = ProcessResources.cpuSeconds()
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
        let cpu = ProcessResources.cpuSeconds() - cpuBefore
        let wireAfter = ProcessResources.tcpPayloadBytes()
        await connection.close()

        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: completed == parameters.count,
            count: parameters.count, completed: completed, elapsed: elapsed)
        builder.addThroughput(messages: completed, bytes: receivedBytes)
        if parameters.sendsJSON {
            // What compression saves and costs: TCP payload bytes per message each way (frame
            // headers included) and this process's CPU per message sent and its echo read.
            let messages = Double(max(1, completed))
            builder.add("wire_bytes_per_msg_out", Double(wireAfter.sent - wireBefore.sent) / messages)
            builder.add("wire_bytes_per_msg_in", Double(wireAfter.received - wireBefore.received) / messages)
            builder.add("cpu_us_per_msg", cpu / messages * 1e6)
        }
        if let failure { builder.fail(failure) }
        return builder.report
    }
}
