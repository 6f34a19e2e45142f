import SynchronizationSupport
import Logging
import Synchronization
import WebSocketCore

extension ClientTransport {
    /// Writes what is waiting (``WriteSide/flush(_:observer:metrics:)``) and acts on what
    /// the write did: a failure drops the connection, a full socket asks for a writable
    /// callback, this side's close frame on the wire moves the close along.
    ///
    /// Called wherever something may have been queued: after reads (pongs, a close
    /// answer), from posted work (user sends), on writable callbacks and timers. It never
    /// blocks; with nothing to write it takes the write side's lock and asks the machine
    /// twice (is there anything to take, is anything left).
    func flush(_ connection: ClientConnection, loop: LoopConnections) {
        guard let socket, !dropRequested, !hasEnded else { return }
        let context = WriteSide.FlushContext(
            socket: socket, tls: tls, scratch: loop.writeScratch, cipherScratch: loop.cipherScratch,
            connection: connection, protocolRuns: isOpen, mayOpenDirectWrites: isOpen && !isNegotiatingWithProxy,
            measures: connection.metrics != nil, reportsWireEvents: configuration.wireEventObserver != nil)
        let outcome = connection.writeSide.flush(context, observer: configuration.wireEventObserver, metrics: connection.metrics)
        if outcome.messageBytesWritten > 0 { connection.bytesWritten.add(outcome.messageBytesWritten, ordering: .relaxed) }
        if let failure = outcome.failure {
            writeFailed(connection, reason: failure)
            return
        }
        if outcome.wantsWritable { requestWritable() }
        if outcome.closeFrameWritten, let (frame, endsTLS) = connection.machine.withLock({ $0.closeFrameWritten(now: .now) }) {
            if let code = frame.code { configuration.wireEventObserver?(.closeSent(code: code, reason: frame.reason)) }
            if endsTLS {
                tls?.close()
                flushCiphertext(connection, loop: loop)  // the close_notify
            }
            armTimer(connection)
        } else if outcome.deadlinesMoved {
            armTimer(connection)
        }
    }

    /// Moves what TLS has encrypted on its own (its handshake, an alert, a close_notify) to the socket.
    func flushCiphertext(_ connection: ClientConnection, loop: LoopConnections) {
        guard let tls, let socket, !dropRequested else { return }
        let outcome = connection.writeSide.sendCiphertext(of: tls, socket: socket, cipherScratch: loop.cipherScratch)
        if let failure = outcome.failure {
            writeFailed(connection, reason: failure)
        } else if outcome.wantsWritable {
            requestWritable()
        }
    }

    /// Sends bytes that are not frames (a CONNECT or SOCKS5 request, the upgrade request),
    /// through TLS when there is TLS.
    func send(_ bytes: [UInt8], connection: ClientConnection, loop: LoopConnections) {
        guard let socket, !dropRequested else { return }
        let outcome = connection.writeSide.sendHandshakeBytes(
            bytes, socket: socket, tls: isNegotiatingWithProxy ? nil : tls, cipherScratch: loop.cipherScratch)
        if let failure = outcome.failure {
            writeFailed(connection, reason: failure)
        } else if outcome.wantsWritable {
            requestWritable()
        }
    }

    /// A write failed: the socket is going (the peer reset it or vanished).
    func writeFailed(_ connection: ClientConnection, reason: String) {
        connection.logger.debug("write failed (\(reason)); dropping the connection")
        noteAbnormalEnd(.connectionFailed("write failed: \(reason) (\(target.description))"))
        requestDrop()
    }

    /// Asks lws for a `RAW_WRITEABLE` callback (once; later requests ride the same one).
    func requestWritable() {
        guard !writableRequested, let socket else { return }
        writableRequested = true
        socket.requestWritable()
    }
}
