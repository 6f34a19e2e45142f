import FoundationEssentials
import Testing
@testable import WebSocketStreams

@Suite("The counts the metrics take per batch (no I/O)")
struct MetricsTallyTests {
    @Test("the send-queue change is what was queued or taken since the last look, and sums to the queue's size")
    func sendQueueChange() {
        var machine = ConnectionStateMachine(configuration: WebSocketConfiguration())
        _ = machine.established(subprotocol: nil, extensions: nil)
        #expect(machine.takeSendQueueChange() == 0)
        _ = machine.send(.text("12345"))
        _ = machine.send(.binary(Data(count: 100)))
        #expect(machine.takeSendQueueChange() == 105)
        #expect(machine.takeSendQueueChange() == 0)
        var batch = ConnectionStateMachine.WriteBatch()
        machine.takeWrites(budget: 1 << 20, into: &batch, now: .now)
        _ = machine.send(.text("abc"))
        #expect(machine.takeSendQueueChange() == -102)
        _ = machine.transportClosed()
        #expect(machine.takeSendQueueChange() == -3)
    }

    @Test("the writer's tally counts whole messages by type and their bytes, once each")
    func writtenTally() {
        var writer = FrameWriter()
        writer.enqueue(.text("héllo"))
        writer.enqueue(.binary(Data(count: 300)))
        writer.enqueue(.text(""))
        var buffer = [UInt8](repeating: 0, count: 200)
        // 200 bytes hold the first message and part of the second.
        _ = buffer.withUnsafeMutableBytes { writer.fill($0) }
        var tally = writer.takeWrittenTally()
        #expect((tally.textMessages, tally.binaryMessages, tally.bytes) == (1, 0, 6))
        buffer = [UInt8](repeating: 0, count: 1000)
        _ = buffer.withUnsafeMutableBytes { writer.fill($0) }
        tally = writer.takeWrittenTally()
        #expect((tally.textMessages, tally.binaryMessages, tally.bytes) == (1, 1, 300))
        tally = writer.takeWrittenTally()
        #expect((tally.textMessages, tally.binaryMessages, tally.bytes) == (0, 0, 0))
    }
}
