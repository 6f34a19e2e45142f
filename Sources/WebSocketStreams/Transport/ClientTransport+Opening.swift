import SynchronizationSupport
import FoundationEssentials
import Logging
import WebSocketCore

extension ClientTransport {
    /// Starts the connect (from ``LoopConnections/open(_:)``): this side opens the socket and
    /// starts connecting it (``SocketConnector``), then lws adopts it.
    func connect(_ connection: ClientConnection, vhost: OpaquePointer, loop: LoopConnections) {
        assertOnLoop(connection)
        if connection.machine.withLock({ $0.isAbandoningConnect }) {
            opening.step = .ended
            loop.forget(connection)
            return
        }
        opening.step = .connecting
        opening.clock?.tcpStarted(to: target.endpoint)
        let started: SocketConnector.Started
        do {
            started = try SocketConnector.start(target.endpoint, options: SocketConnector.Options(configuration))
        } catch {
            end(connection, connectError: proxied(error))
            loop.forget(connection)
            return
        }
        guard let adopted = RawSocket.adopt(
            descriptor: started.descriptor, vhost: vhost, protocolName: LoopConnections.protocolName,
            opaque: Unmanaged.passUnretained(connection).toOpaque())
        else {
            // lws closed the descriptor; no WSI_DESTROY comes for a wsi that was never returned.
            end(connection, connectError: .connectionFailed("libwebsockets could not take the socket for \(target.description)"))
            loop.forget(connection)
            return
        }
        socket = adopted
        armTimer(connection)
        if started.inProgress {
            // Writable once the connect finished, either way; reading waits until it succeeded.
            adopted.setReading(false)
            writableRequested = true
            adopted.requestWritable()
        } else {
            connected(connection, loop: loop)
        }
    }

    /// A connect that was in progress has finished (the socket became writable).
    func connectFinished(_ connection: ClientConnection, loop: LoopConnections) {
        guard let socket else { return }
        if let error = connectFailure() {
            end(connection, connectError: error)
            dropRequested = true
            return
        }
        socket.setReading(true)
        connected(connection, loop: loop)
    }

    /// Why a connect in progress failed, from the socket's own error (which only a read
    /// would have cleared); `nil` when it has none.
    func connectFailure() -> WebSocketError? {
        socket?.pendingError().map { proxied(.connectionFailed("\($0) (\(target.description))")) }
    }

    /// `error` for a failed connect, saying that the address was the proxy's.
    private func proxied(_ error: WebSocketError) -> WebSocketError {
        guard target.proxy != nil, error.code == .connectionFailed, let reason = error.reason else { return error }
        return .connectionFailed("could not reach the proxy: \(reason)")
    }

    /// TCP is up: tunnel, secure, or upgrade.
    private func connected(_ connection: ClientConnection, loop: LoopConnections) {
        guard case .connecting = opening.step else { return }
        opening.clock?.tcpFinished()
        guard let proxy = target.proxy else {
            startTLSOrUpgrade(connection, loop: loop)
            return
        }
        switch proxy.kind {
        case .httpConnect:
            opening.step = .tunnelling(HTTPResponseParser())
            let proxyAuthorization = configuration.headers.value(named: "Proxy-Authorization")
            send(proxy.connectRequest(to: url, proxyAuthorization: proxyAuthorization), connection: connection, loop: loop)
        case .socks5:
            let handshake = SOCKS5Handshake(
                destination: target.socksDestination ?? .hostName(url.host), port: url.port,
                credentials: proxy.credentials, proxyName: proxy.summary)
            opening.step = .negotiatingSOCKS(handshake)
            send(handshake.greeting, connection: connection, loop: loop)
        }
    }

    func startTLSOrUpgrade(_ connection: ClientConnection, loop: LoopConnections) {
        guard let tlsContext = target.tlsContext else {
            sendUpgradeRequest(connection, loop: loop)
            return
        }
        do {
            tls = try TLSSession(
                context: tlsContext, host: tlsServerName, verifyHost: !configuration.tls.allowUntrustedCertificates,
                resuming: tlsContext.ticket(forServer: tlsServerKey))
        } catch {
            failHandshake(connection, error)
            return
        }
        opening.step = .securing
        opening.clock?.tlsStarted()
        continueTLSHandshake(connection, loop: loop)
    }

    /// The name sent in SNI and verified: ``WebSocketConfiguration/TLS/serverName``, else the URL's host.
    var tlsServerName: String { configuration.tls.serverName ?? url.host }

    /// The key session tickets are kept under.
    var tlsServerKey: String { url.unixSocketPath.map { "unix:\($0)" } ?? "\(tlsServerName):\(url.port)" }

    /// Runs the TLS handshake as far as the bytes received allow.
    func continueTLSHandshake(_ connection: ClientConnection, loop: LoopConnections) {
        guard let tls else { return }
        switch tls.continueHandshake() {
        case .wantsMoreInput:
            flushCiphertext(connection, loop: loop)
        case .failed(let error):
            flushCiphertext(connection, loop: loop)
            failHandshake(connection, error)
        case .done:
            if let refusal = pinMismatch(of: tls) ?? verifierRefusal(of: tls) {
                failHandshake(connection, refusal)
                return
            }
            opening.clock?.tlsFinished(resumed: tls.isResumed)
            connection.logger.trace("TLS established with \(url.hostHeader)\(tls.isResumed ? " (resumed session)" : "")")
            sendUpgradeRequest(connection, loop: loop)
            pumpTLS(connection, loop: loop)
        }
    }

    /// The error for a server whose chain holds none of ``WebSocketConfiguration/TLS/pinnedPublicKeys``,
    /// or `nil`. A resumed session is not checked: its ticket was kept only after a full
    /// handshake with the same settings passed the pins.
    private func pinMismatch(of tls: TLSSession) -> WebSocketError? {
        let pins = configuration.tls.pinnedPublicKeys
        guard !pins.isEmpty, !tls.isResumed else { return nil }
        let presented = tls.peerPublicKeyPins()
        guard presented.allSatisfy({ !pins.contains($0) }) else { return nil }
        return .tlsFailure(
            "the server's certificates match none of tls.pinnedPublicKeys (\(tlsServerName)); their public keys, "
                + "leaf first, are \(TLSSession.describePins(presented))")
    }

    /// The error for a server that ``WebSocketConfiguration/TLS/verifyPeer`` refused, or `nil`.
    private func verifierRefusal(of tls: TLSSession) -> WebSocketError? {
        guard let verifier = configuration.tls.verifyPeer else { return nil }
        let peer = WebSocketTLSPeer(
            host: url.host, serverName: tlsServerName, certificates: tls.peerCertificates(),
            publicKeyPins: tls.peerPublicKeyPins(), isVerified: !configuration.tls.allowUntrustedCertificates,
            isSessionResumed: tls.isResumed)
        do {
            try verifier.verify(peer)
            return nil
        } catch {
            return .tlsFailure("tls.verifyPeer refused the server (\(tlsServerName)): \(error)")
        }
    }

    func sendUpgradeRequest(_ connection: ClientConnection, loop: LoopConnections) {
        opening.step = .upgrading(UpgradeAnswer(url: url, key: opening.key, configuration: configuration, sha1: Crypto.sha1))
        opening.clock?.upgradeStarted()
        connection.logger.trace("sending the upgrade request for \(redactor?.redact(url.description) ?? url.description)")
        reportHandshakeRequest()
        send(opening.requestBytes, connection: connection, loop: loop)
        opening.requestBytes = []
    }

    /// Fails the handshake with `error` and drops the socket.
    func failHandshake(_ connection: ClientConnection, _ error: WebSocketError) {
        opening.error = error
        end(connection, connectError: error)
        requestDrop()
    }

    /// Fails a connection that never reached lws (loop gone).
    func failBeforeConnect(_ connection: ClientConnection, _ error: WebSocketError) {
        end(connection, connectError: error)
    }

    /// The handshake succeeded: the protocol runs from here.
    func opened(_ connection: ClientConnection, negotiated: NegotiatedHandshake, loop: LoopConnections) {
        let codec: NegotiatedCodec
        do {
            codec = try NegotiatedCodec(negotiated: negotiated, configuration: configuration)
        } catch {
            failHandshake(connection, error)
            return
        }
        opening.step = .open
        opening.clock?.opened()
        let timings = opening.clock?.timings ?? WebSocketConnectTimings()
        opening.clock = nil
        let tracksDelivery = socket.map { RawSocket.acknowledgedByteCount(of: $0.descriptor) != nil } ?? false
        connection.writeSide.start(with: codec.writer, tracksDelivery: tracksDelivery)
        connection.recordOpened(timings: timings)  // metrics hook
        if let tls, let tlsContext = target.tlsContext {
            // TLS 1.3 tickets arrive after the handshake, before the 101 has been read.
            if let ticket = tls.ticket() { tlsContext.store(ticket, forServer: tlsServerKey) }
        }
        reader.assembler = codec.assembler
        let (waiter, abandoned, error) = connection.machine.withLock {
            $0.established(subprotocol: negotiated.subprotocol, extensions: negotiated.extensions,
                           responseHeaders: negotiated.headers, timings: timings, now: .now)
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume() }
        armTimer(connection)
        // `connect` was cancelled (or the loop is closing) as the handshake finished: close
        // the orphan properly.
        if abandoned { connection.wake() }
    }

    /// A handshake that ran past `connectTimeout`: the limit, the setting, and the step it
    /// was waiting on.
    var handshakeTimedOut: WebSocketError {
        let step = switch opening.step {
        case .idle, .connecting: "for the TCP connection to \(target.description)"
        case .tunnelling: "for the proxy's answer to CONNECT (\(target.description))"
        case .negotiatingSOCKS: "for the SOCKS5 proxy (\(target.description))"
        case .securing: "in the TLS handshake with \(url.hostHeader)"
        case .upgrading(let answer) where !answer.isReadingRefusal:
            "for the server's answer to the upgrade request (\(url.hostHeader)\(url.pathAndQuery))"
        case .upgrading, .open, .ended: "in the opening handshake with \(url.hostHeader)"
        }
        return WebSocketError(code: .timedOut, reason: "after \(configuration.connectTimeout) (connectTimeout) waiting \(step)")
    }

    /// What a handshake that ended without a clearer reason reports.
    var defaultConnectError: WebSocketError {
        switch opening.step {
        case .idle, .connecting: .connectionFailed("could not connect to \(target.description)")
        case .tunnelling: .connectionFailed("the proxy closed the connection before answering CONNECT")
        case .negotiatingSOCKS: .connectionFailed("the SOCKS5 proxy closed the connection before the tunnel opened")
        case .securing: .tlsFailure("the connection closed during the TLS handshake with \(url.hostHeader)")
        case .upgrading where tls == nil:
            .connectionFailed(
                "the connection closed during the opening handshake (\(url.hostHeader)); if the server speaks TLS, use wss://")
        default: .connectionFailed("the connection closed during the opening handshake (\(url.hostHeader))")
        }
    }
}
