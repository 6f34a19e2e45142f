import WebSocketCore

/// One client connection's protocol as a value, from the first byte of the upgrade request
/// to the ending: bytes in, bytes out, time in, events out. No socket, no lock, no clock.
///
/// It composes the production pieces as the transport does: ``HandshakeRequest`` writes
/// the upgrade request, ``HTTPResponseParser`` and ``HandshakeValidator`` read the answer
/// (with ``DeflateParameters`` for permessage-deflate), ``MessageAssembler`` turns the
/// peer's bytes into messages and control frames, ``ConnectionStateMachine`` makes every
/// decision, and ``FrameWriter`` frames, masks and compresses what goes out, while a
/// ``DeliveryLedger`` remembers where each written message ends in the byte stream.
///
/// The driver (a test, the simulator) moves the bytes and the time:
/// - ``receive(_:now:)`` with what the socket read;
/// - ``takeOutput(budget:now:)`` for what to write next (at most `budget` bytes, what the
///   socket takes now);
/// - ``nextDeadline`` and ``timerFired(now:)`` for time (the clock is a value passed in);
/// - ``send(_:)``, ``ping()``, ``close(code:reason:)`` and ``cancel()`` for the user;
/// - ``wantsSocketClosed``: the engine is done with the socket (a close that finished or
///   timed out, a failed handshake, a dead peer); the driver closes it and calls
///   ``socketClosed(acknowledged:abnormal:)``, as it does when the peer ends TCP;
/// - ``takeEvents()`` for what happened: opened, messages, pongs, the ending.
///
/// Proxies and TLS stay outside: they are byte transforms the driver runs before it.
struct ClientEngine {
    /// What the driver learns from the engine, in order.
    enum Event {
        /// The opening handshake succeeded, with what was negotiated.
        case opened(subprotocol: String?, extensions: String?)
        /// A whole message from the peer.
        case message(WebSocketMessage)
        /// A pong arrived (its payload).
        case pong([UInt8])
        /// The connection ended; the last event.
        case ended(WebSocketEnding)
    }

    /// Where the connection is on its way (the machine holds the protocol's own stages).
    enum Phase {
        /// The upgrade request is being written and the answer (a refusal's body included) read.
        case upgrading(UpgradeAnswer)
        /// The WebSocket protocol runs.
        case open
        /// The socket is gone.
        case ended
    }

    // The state below is changed only by the engine's own methods (this file and
    // `ClientEngine+Frames.swift`); drivers read it and call the methods.
    let url: WebSocketURL
    let configuration: WebSocketConfiguration
    /// Every decision about the connection; read it, never change it from outside.
    var machine: ConnectionStateMachine
    var phase: Phase
    /// The upgrade request's `Sec-WebSocket-Key`.
    private let key: String
    /// The upgrade request bytes not handed out yet.
    var request: [UInt8]
    var assembler: MessageAssembler?
    var writer: FrameWriter
    /// Masking keys for the writer made at open (kept here until then).
    var maskingKeys: MaskingKeySource?
    /// Bytes encoded and not yet taken by the driver (the socket took less than a fill).
    var pending: [UInt8] = []
    /// Every byte handed to the driver so far (the upgrade request included), as TCP counts.
    var streamBytes = 0
    /// Where each written message ends in the stream, until the peer acknowledges it.
    var ledger = DeliveryLedger()
    /// Where this side's close frame ends in the stream, once written.
    var closeFrameStreamEnd: Int?
    var events: [Event] = []
    var inbound: [InboundEvent] = []
    /// Bytes read while reading was paused (at most one read's worth).
    var heldInput: [UInt8] = []
    /// The consumer's buffer is full, or a failure waits for the consumer.
    var isReadingPaused = false
    /// The engine is done with the socket: the driver closes it, then calls ``socketClosed(acknowledged:abnormal:)``.
    var wantsSocketClosed = false
    /// Why the connection is ending without a close handshake, once known (the first wins).
    var abnormalEnd: WebSocketError?
    /// Why the opening handshake failed, once known.
    var connectError: WebSocketError?
    var nextPingID: UInt64 = 0
    /// The handshake succeeded at some point (the connection may have ended since).
    var didOpen = false

    /// A connection to `url` that starts now: its upgrade request is the first output.
    ///
    /// - Parameters:
    ///   - keyBytes: The 16 nonce bytes of `Sec-WebSocket-Key` (random in production).
    ///   - maskingKeys: Where frame masks come from (``MaskingKeySource/seeded(_:)`` for a
    ///     reproducible run; the CSPRNG by default).
    ///   - sha1: The digest for `Sec-WebSocket-Accept`.
    init(
        url: WebSocketURL, configuration: WebSocketConfiguration = WebSocketConfiguration(), now: ContinuousClock.Instant,
        keyBytes: [UInt8] = Crypto.randomBytes(count: 16), maskingKeys: MaskingKeySource = MaskingKeySource(),
        sha1: @escaping ([UInt8]) -> [UInt8] = { Crypto.sha1($0) }, keepaliveGrid: Bool = true
    ) {
        self.url = url
        self.configuration = configuration
        self.maskingKeys = maskingKeys
        let handshake = HandshakeRequest(url: url, configuration: configuration, keyBytes: keyBytes)
        key = handshake.key
        request = handshake.bytes
        machine = ConnectionStateMachine(configuration: configuration, handshakeDeadline: now + configuration.connectTimeout)
        // `false`: keep-alive pings at exact times, not on the grid shared by every connection.
        if !keepaliveGrid { machine.timing.pingGrid = nil }
        phase = .upgrading(UpgradeAnswer(url: url, key: handshake.key, configuration: configuration, sha1: sha1))
        writer = FrameWriter()
    }

    /// The `Sec-WebSocket-Key` sent (a test server computes its accept value from it).
    var handshakeKey: String { key }

    /// Whether the protocol runs (the handshake succeeded and the socket is not gone).
    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// Whether the connection has ended (``Event/ended(_:)`` was emitted).
    var hasEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// When ``timerFired(now:)`` must next be called; `nil` when nothing is armed (always after the end).
    var nextDeadline: ContinuousClock.Instant? {
        hasEnded || wantsSocketClosed ? nil : machine.nextDeadline
    }

    /// The events since the last call, oldest first. Taking them is the consumer reading:
    /// the messages buffered in the machine are handed over, and the consumer holds them
    /// until its next call. A call that finds no message is the consumer coming back for
    /// more (as a task parks in production): a failure held for it applies then, after what
    /// it sent meanwhile. Reading resumes when it had paused (the bytes held are read).
    mutating func takeEvents(now: ContinuousClock.Instant) -> [Event] {
        var handedOver = false
        var progressed = true
        while progressed {
            progressed = false
            if drainMessages() { handedOver = true }
            serviceRequests(now: now)
            if !handedOver, consumerCameBack(), let failing = machine.applyDeferredFailure(now: now) {
                carryOut(failing)
            } else if isReadingPaused, !hasEnded, machine.readingResumed(now: now) {
                isReadingPaused = false
                let held = heldInput
                heldInput = []
                if !held.isEmpty {
                    readFrames(held, now: now)
                    progressed = true
                }
            }
        }
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// Moves the messages the machine buffered into the events; whether there were any.
    /// The machine counts the consumer as holding them until it comes back.
    @discardableResult
    mutating func drainMessages() -> Bool {
        var any = false
        while machine.bufferedMessageCount > 0, case .message(let message, _) = machine.next() {
            events.append(.message(message))
            any = true
        }
        return any
    }

    /// The consumer asks for more with nothing buffered: it is done with what it held.
    private mutating func consumerCameBack() -> Bool {
        if case .message(let message, _) = machine.next() {
            events.append(.message(message))  // cannot happen: the buffer was just drained
            return false
        }
        return true
    }

    // MARK: - The user

    /// Queues a message behind those accepted before; `false` when the queue is full (the
    /// sender would wait) or the connection is not open (then ``closedError`` says why).
    mutating func send(_ message: WebSocketMessage, compress: Bool = true) -> Bool {
        send(OutgoingMessage(message: message, options: SendOptions(mayCompress: compress)))
    }

    /// Queues a message, or one piece of a streamed one.
    mutating func send(_ message: OutgoingMessage) -> Bool {
        guard case .accepted = machine.send(message) else { return false }
        return true
    }

    /// Pings the peer (one ping in flight at a time: later ones wait); its pong comes as
    /// ``Event/pong(_:)``. `false` when the connection is not open.
    mutating func ping(payload: [UInt8]? = nil) -> Bool {
        nextPingID += 1
        return machine.queuePing(id: nextPingID, payload: payload)
    }

    /// Starts the close handshake: the close frame goes out behind the messages accepted
    /// before it. While connecting, the attempt is abandoned.
    mutating func close(code: WebSocketCloseCode = .normalClosure, reason: String = "", now: ContinuousClock.Instant) {
        guard !hasEnded else { return }
        _ = machine.requestClose(code: code, reason: reason)
        serviceRequests(now: now)
    }

    /// The user gave up (its task was cancelled): an open connection goes away with 1001;
    /// a connection still opening is dropped.
    mutating func cancel(now: ContinuousClock.Instant) {
        guard !hasEnded else { return }
        if isOpen {
            _ = machine.consumerCancelled()
        } else {
            _ = machine.cancelConnect()
        }
        serviceRequests(now: now)
    }

    /// The error for operations on a connection that is not open.
    var closedError: WebSocketError { machine.closedError }

    /// What the machine asked the loop for, done at once (the engine is its own loop).
    mutating func serviceRequests(now: ContinuousClock.Instant) {
        let requests = machine.takeRequests(now: now)
        if requests.contains(.abort), !isOpen, !hasEnded {
            // Before the upgrade request went out, drop the attempt at once; after, give the
            // server's answer a moment, so a 101 is closed properly with 1001 (as the transport does).
            if request.isEmpty, streamBytes > 0 {
                _ = machine.waitForAbandonedUpgrade(now: now)
            } else {
                connectError = .connectionFailed("closed before the handshake finished")
                wantsSocketClosed = true
            }
        }
        if requests.contains(.applyDeferredFailure), let failing = machine.applyDeferredFailure(now: now) {
            carryOut(failing)
        }
    }

    // MARK: - Bytes in

    /// Bytes the socket read.
    mutating func receive(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        guard !hasEnded, !wantsSocketClosed else { return }
        switch phase {
        case .upgrading(var answer):
            let outcome = bytes.withUnsafeBytes { answer.read($0) }
            phase = .upgrading(answer)
            switch outcome {
            case .needsMore:
                break
            case .upgraded(let negotiated, let framesStart):
                opened(negotiated, now: now)
                if isOpen, framesStart < bytes.count { readFrames(Array(bytes[framesStart...]), now: now) }
            case .failed(let error):
                failHandshake(error)
            }
        case .open:
            readFrames(bytes, now: now)
        case .ended:
            break
        }
    }

    /// The handshake succeeded: the codec is set up with what was negotiated (as the transport sets it up).
    private mutating func opened(_ negotiated: NegotiatedHandshake, now: ContinuousClock.Instant) {
        let codec: NegotiatedCodec
        do {
            codec = try NegotiatedCodec(negotiated: negotiated, configuration: configuration, keys: maskingKeys ?? MaskingKeySource())
        } catch {
            failHandshake(error)
            return
        }
        writer = codec.writer
        assembler = codec.assembler
        maskingKeys = nil
        phase = .open
        didOpen = true
        let (_, abandoned, _) = machine.established(
            subprotocol: negotiated.subprotocol, extensions: negotiated.extensions, responseHeaders: negotiated.headers, now: now)
        events.append(.opened(subprotocol: negotiated.subprotocol, extensions: negotiated.extensions))
        if abandoned { serviceRequests(now: now) }
    }

    /// Fails the opening handshake with `error`: the engine ends now.
    mutating func failHandshake(_ error: WebSocketError) {
        connectError = error
        wantsSocketClosed = true
        end(acknowledged: nil)
    }
}
