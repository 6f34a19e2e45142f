/// One connection of the raw TLS listener, served start to end on its own thread: the TLS
/// handshake, the upgrade request, then its route: a raw route through
/// ``RawRouteMachine`` (exactly as ``RawPeer`` serves it over plain TCP), or a
/// ``TLSMisbehaviour``.
///
/// Not `Sendable`: it lives and dies on its connection's thread.
final class RawTLSPeer {
    /// How the listener should close the socket once ``run()`` returns.
    enum Ending {
        /// Close it (TLS and TCP were already ended as the route wanted).
        case close
        /// Close it with `SO_LINGER` {1, 0}, so the kernel sends a reset (RST).
        case reset
    }

    private let stream: TLSServerStream
    private let recorder: ServerRecorder
    /// How long the client may take to finish the TLS handshake and send its request.
    private static let requestTimeout: Duration = .seconds(10)
    /// The largest request head read.
    private static let requestLimit = 64 * 1024

    init(stream: TLSServerStream, recorder: ServerRecorder) {
        self.stream = stream
        self.recorder = recorder
    }

    /// Serves the connection; returns once it is over.
    func run() -> Ending {
        let deadline = ContinuousClock.now + Self.requestTimeout
        guard stream.handshake(until: deadline) else { return .close }
        guard let (request, early) = readRequest(until: deadline) else { return finish() }
        let route = ServerRoute(path: request.path, query: request.query)
        guard route.isServedByRawTLSListener else {
            reject(request, route: route)
            return finish()
        }
        let id = recorder.opened { id in
            var record = TestServer.ConnectionRecord(
                id: id, path: request.path, query: request.query, headers: request.headers, subprotocol: nil,
                compressed: false, openedAt: .now)
            record.tlsResumed = stream.isResumed
            return record
        }
        defer { recorder.markClosed(id) }
        let key = request.headers["sec-websocket-key"] ?? ""
        if case .tls(let misbehaviour) = route {
            return misbehave(misbehaviour, key: key, id: id)
        }
        var machine = RawRouteMachine(route: route, key: key)
        serve(&machine, id: id, early: early)
        return finish()
    }

    /// Reads the upgrade request's head; also returns what the client sent after it.
    private func readRequest(until deadline: ContinuousClock.Instant) -> (UpgradeRequestHead, early: [UInt8])? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < Self.requestLimit {
            guard case .bytes(let count) = buffer.withUnsafeMutableBytes({ stream.read(into: $0, until: deadline) }) else {
                return nil
            }
            received += buffer[..<count]
            if let end = UpgradeRequestHead.endOfHead(in: received) {
                return UpgradeRequestHead(received[..<end]).map { ($0, Array(received[end...])) }
            }
        }
        return nil
    }

    /// Answers a route this listener does not serve as the other listener would refuse it.
    private func reject(_ request: UpgradeRequestHead, route: ServerRoute) {
        var response = HTTPResponses.rejection(
            status: 404, body: "\(request.path) is served on the test server's main port, not its raw TLS listener",
            retryAfter: nil, location: nil)
        var status = 404
        if case .reject(let rejectStatus, let body, let retryAfter, let location) = route {
            response = HTTPResponses.rejection(status: rejectStatus, body: body, retryAfter: retryAfter, location: location)
            status = rejectStatus
        }
        recorder.rejected(path: request.path, status: status)
        _ = stream.write(response)
    }

    /// Runs a raw route: carries out the machine's actions until one ends the connection,
    /// the client leaves, or the socket is shut down.
    private func serve(_ machine: inout RawRouteMachine, id: Int, early: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var early = early
        var timer: ContinuousClock.Instant?
        var action = machine.start()
        while true {
            recorder.record(action.received, connection: id)
            if !action.write.isEmpty, !stream.write(action.write) { return }
            if action.end { return }
            if let delay = action.timer { timer = .now + delay }
            if !early.isEmpty {
                action = early.withUnsafeBytes { machine.received($0) }
                early = []
                continue
            }
            switch stream.read(into: buffer, until: timer) {
            case .bytes(let count):
                action = machine.received(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            case .timedOut:
                timer = nil
                action = machine.timerFired()
            case .ended:
                return
            }
        }
    }

    /// Answers the upgrade, then breaks TLS as `misbehaviour` says.
    private func misbehave(_ misbehaviour: TLSMisbehaviour, key: String, id: Int) -> Ending {
        guard let upgrade = HTTPResponses.upgrade(key: key), stream.write(upgrade) else { return finish() }
        switch misbehaviour {
        case .truncatedRecord:
            guard let record = stream.encryptedRecord(of: RawRouteMachine.textFrame("hello")) else { return finish() }
            _ = stream.sendRaw(record.dropLast(5))
            stream.shutdownSending()
            stream.drain(until: .now + .seconds(5))
            return .close
        case .resetMidRecord:
            // A reset can make the client drop bytes it has not read yet: first make sure
            // it read the 101 (its pong to a ping sent after it).
            guard stream.write(RawRouteMachine.controlFrame(0x89, payload: Array("sync".utf8))),
                  awaitPong(id: id, until: .now + .seconds(5)),
                  let record = stream.encryptedRecord(of: RawRouteMachine.textFrame("lost"))
            else { return finish() }
            _ = stream.sendRaw(record.prefix(record.count / 2))
            return .reset
        case .closeNotify:
            guard stream.write(RawRouteMachine.textFrame("bye")) else { return finish() }
            return finish()
        }
    }

    /// Reads the client's frames until a pong; false if it does not come by `deadline`.
    private func awaitPong(id: Int, until deadline: ContinuousClock.Instant) -> Bool {
        var reader = ClientFrameReader()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case .bytes(let count) = buffer.withUnsafeMutableBytes({ stream.read(into: $0, until: deadline) }) {
            buffer.withUnsafeBytes { reader.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            while let frame = reader.nextFrame() {
                guard frame.opcode == 0xA else { continue }
                recorder.record(ClientActivity(pongs: 1), connection: id)
                return true
            }
        }
        return false
    }

    /// Ends the connection cleanly: close_notify, a FIN, then whatever the client still
    /// sends is read until it closes too (closing with unread bytes would reset).
    private func finish() -> Ending {
        stream.closeNotify()
        stream.shutdownSending()
        stream.drain(until: .now + .seconds(2))
        return .close
    }
}
