import BenchmarkKit
import WebSocketStreams

/// The Autobahn|Testsuite client contract: connect to the case URL, echo every message
/// back with its type, and return when the connection closes. With `--stream`, each
/// message is read in pieces and echoed piece by piece as they arrive.
enum AutobahnEchoClient {
    static func run(_ parameters: BenchmarkParameters) async -> BenchmarkReport {
        let clock = ContinuousClock()
        var configuration = parameters.configuration
        // Case 9.x sends messages of up to 16 MiB; keep-alive pings would only add frames
        // the fuzzingserver has to log.
        configuration.maxMessageSize = max(configuration.maxMessageSize, 64 * 1024 * 1024)
        configuration.pingInterval = nil
        configuration.streamsIncomingMessages = parameters.streamsMessages
        let connection: WebSocket
        do {
            connection = try await WebSocket.connect(to: parameters.url, configuration: configuration, eventLoop: parameters.nextLoop())
        } catch {
            return failedToConnect(parameters, error)
        }
        let start = clock.now
        var echoed = 0
        if parameters.streamsMessages {
            for await message in connection.messageStreams {
                do {
                    try await connection.send(streaming: message, as: message.kind)
                    echoed += 1
                } catch {
                    break
                }
            }
        } else {
            for await message in connection.messages {
                do {
                    try await connection.send(message)
                    echoed += 1
                } catch {
                    break
                }
            }
        }
        let elapsed = clock.now - start
        var builder = BenchmarkReportBuilder(
            workload: parameters.workload, ok: true, count: echoed, completed: echoed, elapsed: elapsed)
        builder.add("close_code", Double(connection.closeCode?.rawValue ?? 0))
        // The fuzzingserver grades the case; an error here (e.g. a protocol violation this
        // client detected and closed for) is information, not a failed run.
        var report = builder.report
        report.error = connection.error.map { "\($0)" }
        return report
    }
}
