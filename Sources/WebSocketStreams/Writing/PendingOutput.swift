/// Bytes a connection could not send yet (the socket was full), in order. Empty almost
/// always: writes go from the loop's shared scratch buffer straight to the socket, and
/// only what the kernel did not take is copied here. Memory is given back once a large
/// backlog has drained.
///
/// Part of the write side's state (``WriteSide/State/pending``), behind its lock: the loop
/// and a task whose direct write the socket took only part of both append to it.
struct PendingOutput {
    private var bytes: [UInt8] = []
    private var start = 0

    var isEmpty: Bool { start == bytes.count }
    var count: Int { bytes.count - start }

    mutating func append(_ more: UnsafeRawBufferPointer) {
        if start > 0, start == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 256 * 1024)
            start = 0
        }
        bytes.append(contentsOf: more)
    }

    /// Calls `body` with the unsent bytes; it returns how many went out.
    mutating func drain(_ body: (UnsafeRawBufferPointer) -> Int) {
        let sent = bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        start += sent
        if start == bytes.count {
            if bytes.capacity > 256 * 1024 { bytes = [] } else { bytes.removeAll(keepingCapacity: true) }
            start = 0
        }
    }
}
