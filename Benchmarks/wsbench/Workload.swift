import ArgumentParser

/// The benchmark workloads; the raw C client (`wsbench-c`) implements the same ones.
enum Workload: String, CaseIterable, ExpressibleByArgument {
    /// Ping-pong: send a small text, await its echo, repeat.
    case w1 = "W1"
    /// Pipelined echo: up to `--inflight` binary messages in flight.
    case w2 = "W2"
    /// Large messages: one binary message of `--size` in flight.
    case w3 = "W3"
    /// Server push: receive `--count` messages as fast as the server sends them.
    case w4 = "W4"
    /// Connections: open `--connections` idle connections at once.
    case w5 = "W5"
    /// Fan-in: `--connections` connections each receiving `--count` pushed messages.
    case w6 = "W6"
    /// Scale: open `--connections` connections, hold them `--hold` seconds with keep-alive
    /// pings every `--ping-interval`, close them; cost per connection at each step.
    case w7 = "W7"
    /// Streamed: one message of `--size` (default 1 GiB) sent in pieces to `/frame-echo`
    /// while its echo is read in pieces; MB/s and the growth of peak RSS.
    case w8 = "W8"
    /// Talking connections: `--connections` connections with default settings, each sending
    /// a 1 KiB JSON text and reading its echo every `--period` seconds, `--count` rounds; RSS
    /// per connection, wire bytes and CPU per message.
    case w9 = "W9"
    /// The Autobahn|Testsuite echo client: echo every message with its type until closed.
    case autobahn
    /// No network: the cost of one `AsyncStream` element (the floor under `messages`).
    case asyncstream
    /// `--count` connect / echo / close cycles; descriptors and memory before and after.
    case churn
    /// No WebSocket: W1's hand-off from a reading thread to a task on the default executor,
    /// over a loopback socket to an echo thread (the floor under W1 on that executor).
    case handoff

    /// Messages (W5: connections) when `--count` is not given.
    var defaultCount: Int {
        switch self {
        case .w1: 20_000
        case .w2: 100_000
        case .w3: 50
        case .w4: 200_000
        case .w5: 1_000
        case .w6: 2_000
        case .w7: 10_000
        case .w8: 1
        case .w9: 3
        case .autobahn: 0
        case .asyncstream: 2_000_000
        case .churn: 1_000
        case .handoff: 20_000
        }
    }

    /// Payload bytes when `--size` is not given.
    var defaultSize: Int {
        switch self {
        case .w1: 32
        case .w2: 1024
        case .w3: 4 * 1024 * 1024
        case .w4, .w6: 128
        case .w8: 1 << 30
        case .w9: 1024
        case .w5, .w7, .autobahn, .asyncstream, .churn: 0
        case .handoff: 32
        }
    }

    /// Connections when `--connections` is not given.
    func defaultConnections(count: Int) -> Int {
        switch self {
        case .w5, .w7: count
        case .w9: 1_000
        case .w6: 100
        case .churn: 4
        default: 1
        }
    }
}
