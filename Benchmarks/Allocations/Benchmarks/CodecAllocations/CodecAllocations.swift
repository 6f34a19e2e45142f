import Benchmark
import FoundationEssentials
import WebSocketStreams
@_spi(Benchmarking) import WebSocketStreamsBenchmarkHooks
import WebSocketTestServer

// Allocation and micro benchmarks of the codec's hot paths and of a loopback echo.
//
// Every benchmark handles `messagesPerIteration` messages per iteration (the scaling
// factor), so its mallocCountTotal divided by 1,000 is mallocs per message. The expected
// counts are in ../../Thresholds/CodecAllocations.<name>.p90.json (p90 of mallocs per
// iteration); `make bench-alloc` fails when a count is above its expected value by more
// than the benchmark's tolerance (none but for the loopback echo).

/// Messages (or payloads) handled per iteration of every benchmark.
private var messagesPerIteration: BenchmarkScalingFactor { .kilo }

/// How far the p90 malloc count may stray from its stored value per iteration. The codec's
/// counts are exact, so any allocation more is a regression; the loopback echo's include
/// the Swift runtime's and the server's, and get a margin.
private func tolerance(_ allocations: Int) -> [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: allocations])]
}

private func configuration(maxDuration: Duration = .seconds(1), tolerance allowed: Int = 0) -> Benchmark.Configuration {
    .init(
        metrics: [.mallocCountTotal, .wallClock, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 3,
        scalingFactor: messagesPerIteration,
        maxDuration: maxDuration,
        maxIterations: 10_000,
        thresholds: tolerance(allowed))
}

/// A 128-byte binary payload.
private let binaryPayload = Data((0..<128).map { UInt8(truncatingIfNeeded: $0 &* 37) })
/// A 128-byte ASCII text, shaped like a small JSON event.
private let asciiText: String = {
    let event = #"{"type":"trade","symbol":"BTC-USD","price":"64123.55","size":"0.0125","side":"buy","sequence":918273645}"#
    return event + String(repeating: " ", count: 128 - event.utf8.count)
}()
/// A 128-byte text with two-, three- and four-byte UTF-8 sequences among the ASCII.
private let mixedText: String = {
    var text = "Grüße aus Zürich, 東京からこんにちは, €42 😀 "
    while text.utf8.count < 128 { text += "a" }
    return text
}()
/// About 1 KiB of JSON-like text: what a server compresses in practice.
private let compressibleText: String = {
    var text = "["
    var index = 0
    while text.utf8.count < 1000 {
        text += #"{"id":\#(index),"symbol":"BTC-USD","price":"6412\#(index % 10).55","side":"buy"},"#
        index += 1
    }
    return text + "{}]"
}()

let benchmarks: @Sendable () -> Void = {
    let count = messagesPerIteration.rawValue

    // MARK: Outgoing: queue a message and encode it into the reused write buffer.

    for (name, message) in [("encode-binary-128B", WebSocketMessage.binary(binaryPayload)),
                            ("encode-text-128B", WebSocketMessage.text(asciiText))] {
        var encoder = CodecBenchmarkHooks.Encoder()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        Benchmark(name, configuration: configuration()) { benchmark in
            for _ in benchmark.scaledIterations {
                let written = encoder.encode(message, into: buffer)
                // 2 bytes, a 16-bit length (128 > 125) and the masking key, then the payload.
                precondition(written == 136, "a 128-byte message is a 136-byte frame")
                blackHole(written)
            }
        }
    }

    // MARK: Incoming: frames decoded and assembled into messages.

    // A burst: one read holding `count` frames (132 KB; the loop reads up to 256 KiB at once).
    for (name, message) in [("decode-binary-128B-burst", WebSocketMessage.binary(binaryPayload)),
                            ("decode-text-128B-burst", WebSocketMessage.text(asciiText))] {
        var decoder = CodecBenchmarkHooks.Decoder()
        let input = CodecBenchmarkHooks.serverFrames(Array(repeating: message, count: count))
        Benchmark(name, configuration: configuration()) { benchmark in
            let decoded = input.withUnsafeBytes { bytes in decoder.read(bytes) { blackHole($0) } }
            precondition(decoded == count, "every frame is a message")
        }
    }

    // Request/response traffic: every read holds one frame (binary payloads then take no
    // shared block: PayloadArena.worthwhileChunk).
    do {
        var decoder = CodecBenchmarkHooks.Decoder()
        let input = CodecBenchmarkHooks.serverFrames([.binary(binaryPayload)])
        Benchmark("decode-binary-128B-per-read", configuration: configuration()) { benchmark in
            input.withUnsafeBytes { bytes in
                for _ in benchmark.scaledIterations {
                    precondition(decoder.read(bytes) { blackHole($0) } == 1, "the frame is a message")
                }
            }
        }
    }

    // The floor under the benchmark above: the `Data` that carries a lone binary message,
    // copied from a read buffer with nothing of ours around it. Above 14 bytes (its inline
    // storage) a `Data` is a storage object plus the bytes it points to: two allocations,
    // whatever a client does, unless the bytes come from a shared block (the burst case).
    do {
        let source = [UInt8](binaryPayload)
        Benchmark("floor-data-128B-copy", configuration: configuration()) { benchmark in
            source.withUnsafeBytes { bytes in
                for _ in benchmark.scaledIterations {
                    blackHole(Data(bytes))
                }
            }
        }
    }

    do {
        var decoder = CodecBenchmarkHooks.Decoder(compressed: true)
        let input = CodecBenchmarkHooks.serverFrames(
            Array(repeating: .text(compressibleText), count: count), compressed: true)
        Benchmark("inflate-text-1KiB", configuration: configuration(maxDuration: .seconds(2))) { benchmark in
            let decoded = input.withUnsafeBytes { bytes in decoder.read(bytes) { blackHole($0) } }
            precondition(decoded == count, "every compressed frame is a message")
        }
    }

    // MARK: The pieces on their own.

    do {
        let source = Array(binaryPayload)
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: source.count, alignment: 16)
        Benchmark("mask-128B", configuration: configuration()) { benchmark in
            source.withUnsafeBytes { source in
                for index in benchmark.scaledIterations {
                    CodecBenchmarkHooks.mask(source, into: destination.baseAddress!, key: UInt32(truncatingIfNeeded: index))
                    // Every result is seen, so no store can be dropped as dead.
                    blackHole(destination.baseAddress!)
                }
            }
        }
    }

    do {
        let text = Array(mixedText.utf8)
        Benchmark("utf8-validate-128B", configuration: configuration()) { benchmark in
            text.withUnsafeBytes { bytes in
                for _ in benchmark.scaledIterations {
                    // identity(_:) hides the input, so the check cannot be hoisted out of the loop.
                    precondition(CodecBenchmarkHooks.isValidUTF8(identity(bytes)))
                }
            }
        }
    }

    // MARK: A whole round trip: send, the in-process server echoes, receive.

    let echo = LoopbackEcho()
    // Half an allocation per round trip either way (of 4: see Benchmarks/analysis.md, "Allocations").
    Benchmark("loopback-echo-128B", configuration: configuration(maxDuration: .seconds(2), tolerance: 500)) { benchmark in
        for _ in benchmark.scaledIterations {
            await echo.roundTrip(.binary(binaryPayload))
        }
    } setup: {
        try await echo.open()
    } teardown: {
        await echo.close()
    }
}

/// A WebSocket client connected to an in-process ``TestServer`` on a free loopback port,
/// compression off, as in `wsbench`'s echo workload. The server's allocations are in the
/// same process, so they count too.
private final class LoopbackEcho {
    private var server: TestServer?
    private var socket: WebSocket?
    private var messages: AsyncStream<WebSocketMessage>.Iterator?

    func open() async throws {
        let server = try await TestServer.start(compression: false)
        let socket = try await WebSocket.connect(to: server.url())
        self.server = server
        self.socket = socket
        messages = socket.messages.makeAsyncIterator()
    }

    /// Sends `message` and waits for its echo.
    func roundTrip(_ message: WebSocketMessage) async {
        guard let socket else { preconditionFailure("open() first") }
        do {
            try await socket.send(message)
        } catch {
            preconditionFailure("send failed: \(error)")
        }
        guard let echoed = await messages?.next() else { preconditionFailure("the connection ended") }
        blackHole(echoed)
    }

    func close() async {
        messages = nil
        await socket?.close()
        socket = nil
        await server?.stop()
        server = nil
    }
}
