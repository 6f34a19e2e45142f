import FoundationEssentials
import Glibc
import Logging
import SynchronizationSupport
import Synchronization

extension ClientTransport {
    /// The most one flush encodes before it lets the loop serve other connections.
    static let flushBudget = 1 << 20

    /// Writes everything that is waiting, as far as the socket takes it: first bytes an
    /// earlier write left over, then frames encoded into the loop's scratch buffer (and
    /// through TLS when there is TLS) and sent from there. What the kernel does not take
    /// is kept in ``pendingOutput`` and the rest waits for `RAW_WRITEABLE`.
    ///
    /// Called wherever something may have been queued: after reads (pongs, a close
    /// answer), from posted work (user sends), on writable callbacks and timers. It never
    /// blocks, and costs nothing when there is nothing to write.
    ///
    /// The connection's write side (``ClientConnection/directWrites``) is held throughout, so
    /// no task writes directly in between; what a direct write left is sent first, and
    /// direct writes are opened again at the end when nothing is left that they could
    /// overtake. Senders, the wire-event observer and the metrics hear of what it did once
    /// the lock is released (``WriteSideEffects``).
    func flush(_ connection: ClientConnection, loop: ClientLoop) {
        guard socket != nil, !dropRequested, !hasEnded else { return }
        defer {
            if !effects.isEmpty { effects.run(observer: configuration.wireEventObserver, metrics: connection.metrics) }
        }
        connection.directWrites.withLock { direct in
            takeDirectWriteLeftovers(&direct, connection: connection)
            flushHoldingWriteSide(connection, loop: loop, direct: &direct)
            direct.streamBase = streamBytes
            direct.descriptor = directWriteDescriptor
            direct.tls = direct.descriptor >= 0 ? tls : nil
            direct.largestPayloadNow = writer.compresses ? FrameWriter.minimumCompressedSize - 1 : DirectWriter.largestPayload
            directWritesOpened = directWritesOpened || direct.descriptor >= 0
        }
    }

    private func flushHoldingWriteSide(_ connection: ClientConnection, loop: ClientLoop, direct: inout DirectWriter) {
        guard !dropRequested, drainPending(connection) else { return }
        if isOpen {
            var budget = Self.flushBudget
            while budget > 0 {
                takeFromConnection(connection)
                let scratch = loop.writeScratch
                let count = writer.fill(scratch)
                guard count > 0 else { break }
                budget -= count
                let encoded = UnsafeRawBufferPointer(rebasing: scratch[..<count])
                if let tls {
                    guard encrypt(encoded, with: tls, recordingInto: &direct) else {
                        writeFailed(connection, reason: "TLS refused to encrypt")
                        return
                    }
                    flushCiphertext(connection, loop: loop)
                } else {
                    recordFill(startingAt: streamBytes, into: &direct)
                    sendOrKeep(encoded, connection: connection)
                }
                if dropRequested || !pendingOutput.isEmpty { break }
            }
            // Once a close frame is queued nothing more is taken from the connection: what it
            // still holds never goes out, and asking for writability for it would spin.
            if writer.hasWork
                || (!writer.isClosing && connection.machine.withLock({ $0.hasPendingWrites(mayPing: keepalive?.mayPing ?? false) })) {
                requestWritable()
            }
            noteBytesWritten(connection)
            if connection.metrics != nil { effects.wrote(writer.takeWrittenTally()) }
            if writer.closeWritten, pendingOutput.isEmpty, !closing.sent {
                closing.sent = true
                if configuration.wireEventObserver != nil, let frame = closeFrameQueued, let code = frame.code {
                    effects.report(.closeSent(code: code, reason: frame.reason))
                }
                closeProgressed(connection)
            }
        }
        // What TLS wrote on its own (a close_notify, a key update, an alert) goes out too.
        if tls != nil { flushCiphertext(connection, loop: loop) }
    }

    /// What tasks' direct writes left for the loop: bytes the socket did not take (they go
    /// first), or the socket's failure.
    private func takeDirectWriteLeftovers(_ direct: inout DirectWriter, connection: ClientConnection) {
        takeStreamCount(from: &direct)
        moveLeftover(from: &direct)
        if let failure = direct.failure {
            direct.failure = nil
            writeFailed(connection, reason: failure)
        }
    }

    /// The descriptor tasks may write to directly now, or -1: only while nothing is queued,
    /// half written or waiting for room that a direct write could overtake (TLS records
    /// included), and never once a close frame is queued.
    private var directWriteDescriptor: Int32 {
        guard isOpen, !isNegotiatingWithProxy, !dropRequested, let socket, pendingOutput.isEmpty,
              !writer.hasWork, !writer.isClosing, closeFrameQueued == nil, (tls?.pendingCiphertextCount ?? 0) == 0
        else { return -1 }
        return socket.descriptor
    }

    /// Runs `body`, which calls into the TLS session, holding the write side while tasks may
    /// write directly: they use the session too (``DirectWriter/tls``), and a session is
    /// used by one thread at a time. Never called inside a flush (which holds the lock).
    /// When `stopsDirectWrites` says so of the result (a failed session), tasks may not write
    /// directly from then on, decided before the lock is let go: no task uses a failed session.
    func withTLSSession<Result>(
        _ connection: ClientConnection, _ body: () -> Result, stopsDirectWrites: (Result) -> Bool = { _ in false }
    ) -> Result {
        guard directWritesOpened, tls != nil else { return body() }
        return connection.directWrites.withLock { direct in
            let result = body()
            if stopsDirectWrites(result) { stopDirectWrites(&direct) }
            return result
        }
    }

    /// Stops direct writes for good (the socket is closing): waits out one in progress, so
    /// no task writes to a descriptor lws is about to close.
    func closeDirectWrites(_ connection: ClientConnection) {
        guard directWritesOpened else { return }
        connection.directWrites.withLock { stopDirectWrites(&$0) }
    }

    /// Closes direct writes, holding the write side. What a direct write left unsent goes to
    /// ``pendingOutput``, so whatever the loop still writes (a TLS alert) follows it.
    private func stopDirectWrites(_ direct: inout DirectWriter) {
        directWritesOpened = false
        direct.descriptor = -1
        direct.tls = nil
        takeStreamCount(from: &direct)
        moveLeftover(from: &direct)
    }

    /// Adds what direct writes handed to the socket to the loop's count of the stream.
    private func takeStreamCount(from direct: inout DirectWriter) {
        streamBytes += direct.directBytes
        direct.directBytes = 0
    }

    /// The plaintext TLS takes in one call, so that the end of every record is known: one
    /// record's worth (16 KiB), as OpenSSL cuts them.
    static let tlsRecordPlaintext = 16 * 1024

    /// Encrypts one fill of `writer`, a record at a time, and records each message it
    /// completed (and its close frame) as ending where the record that carried its last
    /// byte ends: the peer can read none of a record before all of it arrives.
    private func encrypt(_ encoded: UnsafeRawBufferPointer, with tls: TLSSession, recordingInto direct: inout DirectWriter) -> Bool {
        let completed = writer.completedInFill
        var next = 0
        var start = 0
        while start < encoded.count {
            let end = min(encoded.count, start + Self.tlsRecordPlaintext)
            guard tls.writePlaintext(UnsafeRawBufferPointer(rebasing: encoded[start..<end])) else { return false }
            let recordEnd = streamBytes + tls.pendingCiphertextCount
            if let closeEnd = writer.closeEndInFill, closeEnd > start, closeEnd <= end { closeFrameStreamEnd = recordEnd }
            while direct.tracksDelivery, next < completed.count, completed[next].end <= end {
                direct.ledger.record(completed[next].message, endingAt: recordEnd)
                next += 1
            }
            start = end
        }
        if let socket { direct.forgetAcknowledged(on: socket.descriptor) }
        return true
    }

    /// Records the messages the latest fill completed, and its close frame, at the stream
    /// offsets they end at: the fill's output goes to the socket from `start` on.
    private func recordFill(startingAt start: Int, into direct: inout DirectWriter) {
        if let closeEnd = writer.closeEndInFill { closeFrameStreamEnd = start + closeEnd }
        guard direct.tracksDelivery else { return }
        for (end, message) in writer.completedInFill {
            direct.ledger.record(message, endingAt: start + end)
        }
        if let socket { direct.forgetAcknowledged(on: socket.descriptor) }
    }

    /// Bytes a direct write could not send go first in ``pendingOutput``.
    private func moveLeftover(from direct: inout DirectWriter) {
        guard !direct.leftover.isEmpty else { return }
        direct.leftover.withUnsafeBytes { pendingOutput.append($0) }
        direct.leftover = []
    }

    /// Takes messages, pings and the close frame from the state machine into the writer.
    private func takeFromConnection(_ connection: ClientConnection) {
        guard writer.wantsMessages else { return }
        var batch = ConnectionStateMachine.WriteBatch()
        swap(&batch, &spareBatch)
        defer {
            batch.removeAll()
            swap(&batch, &spareBatch)
        }
        let mayPing = keepalive?.mayPing ?? false
        let measuresQueue = connection.metrics != nil
        let sendQueueChange = connection.machine.withLock { machine in
            machine.takeWrites(budget: Self.flushBudget, into: &batch, mayPing: mayPing, now: .now)
            return measuresQueue ? machine.takeSendQueueChange() : 0
        }
        if sendQueueChange != 0 { effects.sendQueueChanged(by: sendQueueChange) }
        if !batch.admitted.isEmpty { effects.resume(batch.admitted) }
        for (id, chosen) in batch.pings {
            let payload = chosen ?? Keepalive.payload(tag: .user, id: id)
            writer.enqueueControl(.ping, payload: payload)
            keepalive?.pingSent(tag: .user, id: id, payload: payload, at: .now)
            if configuration.wireEventObserver != nil { effects.report(.pingSent(keepalive: false)) }
            armTimer()
        }
        for message in batch.messages { writer.enqueue(message) }
        if let close = batch.close {
            queueClose(CloseFrame(code: close.code, reason: close.reason), now: false)
            if closing.deadline == nil {
                closing.deadline = .now + Self.closeTimeout
                armTimer()
            }
        }
    }

    /// Moves what TLS has encrypted to the socket.
    func flushCiphertext(_ connection: ClientConnection, loop: ClientLoop) {
        guard let tls else { return }
        let scratch = loop.cipherScratch
        while tls.pendingCiphertextCount > 0, !dropRequested {
            let count = tls.takeCiphertext(into: scratch)
            guard count > 0 else { break }
            sendOrKeep(UnsafeRawBufferPointer(rebasing: scratch[..<count]), connection: connection)
        }
    }

    /// Sends bytes that are not part of the frame stream yet (a CONNECT or upgrade
    /// request), through TLS when there is TLS.
    func send(_ bytes: [UInt8], connection: ClientConnection, loop: ClientLoop) {
        bytes.withUnsafeBytes { bytes in
            if let tls, !isNegotiatingWithProxy {
                guard tls.writePlaintext(bytes) else {
                    writeFailed(connection, reason: "TLS refused to encrypt")
                    return
                }
                flushCiphertext(connection, loop: loop)
            } else {
                sendOrKeep(bytes, connection: connection)
            }
        }
    }

    /// Sends `bytes` now if nothing is waiting before them, keeping what the socket does
    /// not take; else queues them all behind what waits.
    private func sendOrKeep(_ bytes: UnsafeRawBufferPointer, connection: ClientConnection) {
        guard let socket, !dropRequested else { return }
        streamBytes += bytes.count
        guard pendingOutput.isEmpty else {
            pendingOutput.append(bytes)
            return
        }
        switch socket.send(bytes) {
        case .sent:
            bytesSentToSocket &+= bytes.count
        case .partial(let count):
            bytesSentToSocket &+= count
            pendingOutput.append(UnsafeRawBufferPointer(rebasing: bytes[count...]))
            requestWritable()
        case .failed(let code):
            writeFailed(connection, reason: String(cString: strerror(code)))
        }
    }

    /// Sends what an earlier write left; `false` while some remains (writable requested).
    private func drainPending(_ connection: ClientConnection) -> Bool {
        guard !pendingOutput.isEmpty, let socket else { return true }
        var failure: Int32?
        pendingOutput.drain { bytes in
            switch socket.send(bytes) {
            case .sent:
                bytesSentToSocket &+= bytes.count
                return bytes.count
            case .partial(let count):
                bytesSentToSocket &+= count
                return count
            case .failed(let code):
                failure = code
                return 0
            }
        }
        if let failure {
            writeFailed(connection, reason: String(cString: strerror(failure)))
            return false
        }
        if !pendingOutput.isEmpty {
            requestWritable()
            return false
        }
        return true
    }

    /// A write failed: the socket is going (the peer reset it or vanished).
    private func writeFailed(_ connection: ClientConnection, reason: String) {
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

    private func noteBytesWritten(_ connection: ClientConnection) {
        let total = writer.messageBytesWritten
        if total > reportedBytesWritten {
            connection.bytesWritten.add(total - reportedBytesWritten, ordering: .relaxed)
            reportedBytesWritten = total
        }
    }
}
