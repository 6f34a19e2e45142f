import FoundationEssentials
import Glibc
import Testing
@testable import WebSocketStreams

@Suite("DeliveryLedger and the kernel's acknowledgement count")
struct DeliveryLedgerTests {
    @Test("a message is unacknowledged until every byte up to its end is acknowledged")
    func unacknowledgedByOffset() {
        var ledger = DeliveryLedger()
        // An upgrade request of 200 bytes, then frames of 7, 0+2 and 130 bytes.
        ledger.record(.text("hello"), endingAt: 207)
        ledger.record(.binary(.init()), endingAt: 209)
        ledger.record(.text(String(repeating: "x", count: 126)), endingAt: 339)
        #expect(ledger.unacknowledged(acknowledged: 0).count == 3)
        #expect(ledger.unacknowledged(acknowledged: 206) == [.text("hello"), .binary(.init()), .text(String(repeating: "x", count: 126))])
        #expect(ledger.unacknowledged(acknowledged: 207) == [.binary(.init()), .text(String(repeating: "x", count: 126))])
        #expect(ledger.unacknowledged(acknowledged: 338) == [.text(String(repeating: "x", count: 126))])
        #expect(ledger.unacknowledged(acknowledged: 339).isEmpty)
        #expect(ledger.unacknowledged(acknowledged: 10_000).isEmpty)
    }

    @Test("acknowledged entries are forgotten in batches, and the next look waits for the ledger to double")
    func pruning() {
        var ledger = DeliveryLedger()
        for index in 1...DeliveryLedger.minimumPruneThreshold - 1 {
            ledger.record(.text("m\(index)"), endingAt: index * 10)
        }
        #expect(!ledger.needsPruning)
        ledger.record(.text("last"), endingAt: 100_000)
        #expect(ledger.needsPruning)
        // The peer acknowledged all but the last 200 messages' bytes (a slow peer).
        let acknowledgedCount = DeliveryLedger.minimumPruneThreshold - 200
        ledger.forget(acknowledged: acknowledgedCount * 10)
        #expect(ledger.count == 200)
        #expect(ledger.pruneThreshold == DeliveryLedger.minimumPruneThreshold + 144, "twice what is still in flight")
        #expect(ledger.unacknowledged(acknowledged: acknowledgedCount * 10).first == .text("m\(acknowledgedCount + 1)"))
        for index in 0..<300 { ledger.record(.text("n\(index)"), endingAt: 200_000 + index) }
        ledger.forget(acknowledged: 0)
        #expect(ledger.count == 500)
        #expect(ledger.pruneThreshold == 1000, "a peer that acknowledges nothing costs one look per doubling")
        ledger.removeAll()
        #expect(ledger.count == 0 && ledger.unacknowledged(acknowledged: 0).isEmpty)
    }

    @Test("TCP_INFO counts the bytes the peer acknowledged: all it read, none written after it closed")
    func kernelAcknowledgement() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(bind(listener, $0, length) == 0 && listen(listener, 1) == 0)
                try #require(getsockname(listener, $0, &length) == 0)
            }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try #require(connect(client, $0, length) == 0)
            }
        }
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        #expect(RawSocket.acknowledgedByteCount(of: client) == 0)
        let bytes = [UInt8](repeating: 7, count: 100)
        #expect(send(client, bytes, 100, 0) == 100)
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(recv(server, &buffer, 100, Int32(MSG_WAITALL)) == 100)
        // The acknowledgement follows the read within a round trip on loopback.
        var acknowledged = RawSocket.acknowledgedByteCount(of: client)
        for _ in 0..<1000 where acknowledged != 100 {
            usleep(1000)
            acknowledged = RawSocket.acknowledgedByteCount(of: client)
        }
        #expect(acknowledged == 100)
        close(server)
        // Written after the peer closed: taken by our kernel, answered with a reset, never acknowledged.
        #expect(send(client, bytes, 50, Int32(MSG_NOSIGNAL)) == 50)
        var pollDescriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pollDescriptor, 1, 2000) == 1)
        #expect(RawSocket.acknowledgedByteCount(of: client) == 100)
        #expect(RawSocket.acknowledgedByteCount(of: -1) == nil)
    }
}
