import WebSocketStreams

extension TestServer.Handler {
    /// A handler that plays the server's side of `recording` to each client.
    ///
    /// Each server message is sent once the client messages recorded before it have arrived
    /// (matched in order as `matching` says), after the recorded gap (unless `timing` is
    /// ``TestServer/ReplayTiming/immediate``); then the recording's ending: the server's close
    /// with its code and reason, a drop, or (when the client closed first, or nothing ended)
    /// waiting for the client to close. A client that diverges gets a 1008 close whose
    /// reason says where, e.g. `message 2: expected text "subscribe", got text "hello"`; the
    /// record's ``TestServer/ConnectionRecord/closeReasonSent`` says the same.
    ///
    /// ```swift
    /// let recording = try TestServer.Recording(contentsOfFile: "Fixtures/feed.jsonl")
    /// let server = try await TestServer.start(handlers: ["/feed": .replaying(recording)])
    /// ```
    public static func replaying(
        _ recording: TestServer.Recording, matching: TestServer.ReplayMatching = .content,
        timing: TestServer.ReplayTiming = .recorded
    ) -> TestServer.Handler {
        TestServer.Handler(subprotocols: recording.subprotocol.map { [$0] } ?? []) { connection in
            var replay = Replay(timing: timing)
            var clientMessages = 0
            for event in recording.events {
                switch event.kind {
                case .message(let expected, from: .client):
                    clientMessages += 1
                    guard let received = await connection.receive() else { return }
                    if matching == .content, received != expected {
                        let reason = "message \(clientMessages): expected \(Replay.describe(expected)), got \(Replay.describe(received))"
                        await connection.close(code: .policyViolation, reason: HandlerRunner.closeReason(reason))
                        return
                    }
                    replay.happened(event)
                case .message(let message, from: .server):
                    try await replay.waitForGap(before: event)
                    try await connection.send(message)
                    replay.happened(event)
                case .close(let code, let reason, from: .server):
                    try await replay.waitForGap(before: event)
                    await connection.close(code: code, reason: reason)
                    return
                case .close(_, _, from: .client):
                    break
                case .drop:
                    try await replay.waitForGap(before: event)
                    await connection.drop()
                    return
                }
            }
            // The client closes (as recorded, or whenever it is done).
            for await _ in connection.messages {}
        }
    }
}

/// Where a replay is: when the last event happened, on the recording's clock and on ours.
private struct Replay {
    let timing: TestServer.ReplayTiming
    var recordedTime: Duration = .zero
    var happenedAt = ContinuousClock.now

    init(timing: TestServer.ReplayTiming) {
        self.timing = timing
    }

    mutating func happened(_ event: TestServer.RecordedEvent) {
        recordedTime = event.time
        happenedAt = .now
    }

    /// Waits the recorded gap between the last event and `event`.
    func waitForGap(before event: TestServer.RecordedEvent) async throws {
        guard timing == .recorded, event.time > recordedTime else { return }
        try await Task.sleep(until: happenedAt + (event.time - recordedTime), clock: .continuous)
    }

    /// A message in a few words: its type and the start of its content.
    static func describe(_ message: WebSocketMessage) -> String {
        switch message {
        case .text(let text):
            let shown = text.count > 24 ? String(text.prefix(24)) + "…" : text
            return "text \(shown.debugDescription)"
        case .binary(let data):
            return "binary of \(data.count) bytes"
        }
    }
}
