import BenchmarkKit
import WebSocketStreams

/// W5: `connections` connections opened and held idle. Measures the time until all are
/// open and the resident memory each one adds.
///
/// Connections are opened by a task group with at most `inflight` handshakes under way
/// (default 100), as a client opening many connections should: a thousand simultaneous
/// child tasks would cost more memory (their frames, freed after, stay resident in the
/// heap) and more time than the handshakes themselves.
///
/// One connection per loop is opened and closed first, so the event loops' contexts and
/// the runtime's one-time allocations are in the baseline, as lws's context is in wsbench-c's.
enum IdleConnectionsWorkload {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let target = max(1, parameters.connections)
        do {
            try await ConnectionBatch.warmUp(parameters)
        } catch {
            return failedToConnect(parameters, error)
        }
        var batch = await ConnectionBatch.open(target, parameters)
        // Iterating `messages` ends with the iterator: the readers live until the end.
        var readers: [AsyncStream<WebSocketMessage>.Iterator] = []
        if parameters.sendsJSON, batch.failure == nil {
            // --json: each connection echoes one 1 KiB JSON text first, so a compressing
            // connection holds what it keeps between messages (its window, unless
            // client_no_context_takeover) when memory is measured.
            batch.failure = await echoOneMessageEach(batch.open, readers: &readers)
            batch.residentAfter = ProcessResources.residentKilobytes()
        }
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: batch.open.count == target, count: target, completed: batch.open.count,
            elapsed: batch.elapsed)
        builder.add("open_s", batch.elapsed.seconds)
        builder.add("rss_per_conn_kb", batch.residentPerConnection)
        if let failure = batch.failure { builder.fail(failure) }
        await batch.closeAll()
        readers.removeAll()
        return builder.report
    }

    /// Sends one JSON text on every connection and waits for each echo; the first failure in words.
    private static func echoOneMessageEach(
        _ connections: [WebSocket], readers: inout [AsyncStream<WebSocketMessage>.Iterator]
    ) async -> String? {
        let text = JSONFeed.messages(count: 1, size: 1024)[0]
        for connection in connections {
            do {
                try await connection.send(.text(text))
            } catch {
                return "send failed: \(error)"
            }
            var messages = connection.messages.makeAsyncIterator()
            guard await messages.next() != nil else { return endedEarly(connection) }
            readers.append(messages)
        }
        return nil
    }
}
