import FoundationEssentials
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small binary payloads copied into shared blocks, so a burst of small messages costs one
/// allocation per message (the `Data`'s storage object) instead of two, and the thread
/// that frees them (the consumer's) returns a block's memory once instead of once per
/// message.
///
/// A block is `blockSize` bytes, aligned to its size, with a reference count in its first
/// bytes. Each `Data` it hands out owns one reference, given up by the `Data`'s
/// deallocator on whatever thread releases it; the arena owns one more until it moves
/// to the next block. The count is charged up front for every message the block may
/// hold, so handing out a payload costs no atomic operation; retiring the block gives
/// back the charge it did not use.
///
/// Trade-off: a kept message keeps its whole block (at most `blockSize` bytes) alive,
/// which is why only payloads up to `largestPayload` bytes come from here, only while the
/// assembler reads a large chunk (a burst: ``worthwhileChunk``), and the block is retired
/// at the end of every chunk, so an idle connection holds none.
///
/// Owned by one ``MessageAssembler``, so only the loop thread calls ``data(copying:)``.
package final class PayloadArena {
    /// The size and alignment of a block.
    package static let blockSize = 16 * 1024
    /// The largest payload copied into a block; larger ones get their own `Data`.
    package static let largestPayload = 512
    /// Payloads at most this long fit a `Data`'s inline storage and need no block.
    package static let largestInlinePayload = 14
    /// The smallest chunk of input worth a block: smaller reads carry a few messages at most.
    package static let worthwhileChunk = 4096

    /// Whether payloads go into blocks (set per chunk of input by the assembler).
    package var isEnabled = false
    /// Where payloads start in a block (after the header holding the reference count).
    private static let headerSize = 64
    /// The most payloads one block can hold (every one longer than `largestInlinePayload`).
    private static let payloadsPerBlock = (blockSize - headerSize) / 16

    private var block: UnsafeMutableRawPointer?
    private var used = 0
    private var handedOut = 0

    package init() {}

    deinit { retire() }

    /// A `Data` holding a copy of `bytes`.
    package func data(copying bytes: UnsafeRawBufferPointer) -> Data {
        guard isEnabled, bytes.count > Self.largestInlinePayload, bytes.count <= Self.largestPayload else {
            return Data(bytes)
        }
        if block == nil || used + bytes.count > Self.blockSize || handedOut == Self.payloadsPerBlock {
            retire()
            guard startBlock() else { return Data(bytes) }
        }
        guard let block, let source = bytes.baseAddress else { return Data(bytes) }
        let destination = block + used
        destination.copyMemory(from: source, byteCount: bytes.count)
        used += (bytes.count + 15) & ~15
        handedOut += 1
        return Data(bytesNoCopy: destination, count: bytes.count, deallocator: .custom(PayloadArena.release))
    }

    private func startBlock() -> Bool {
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, Self.blockSize, Self.blockSize) == 0, let memory else { return false }
        let count = BlockReferenceCount(Self.payloadsPerBlock + 1)
        memory.storeBytes(of: Unmanaged.passRetained(count), as: Unmanaged<BlockReferenceCount>.self)
        block = memory
        used = Self.headerSize
        handedOut = 0
        return true
    }

    /// Gives back the current block's unused charge and the arena's own reference: the
    /// block is freed once its last payload is.
    package func retire() {
        guard let block else { return }
        self.block = nil
        Self.giveBack(Self.payloadsPerBlock + 1 - handedOut, ofBlockAt: block)
    }

    /// The deallocator of every `Data` from a block: any thread, once per payload.
    private static let release: @Sendable (UnsafeMutableRawPointer, Int) -> Void = { payload, _ in
        let start = UInt(bitPattern: payload) & ~UInt(PayloadArena.blockSize - 1)
        guard let block = UnsafeMutableRawPointer(bitPattern: start) else { return }
        PayloadArena.giveBack(1, ofBlockAt: block)
    }

    private static func giveBack(_ references: Int, ofBlockAt block: UnsafeMutableRawPointer) {
        let count = block.load(as: Unmanaged<BlockReferenceCount>.self)
        let remaining = count._withUnsafeGuaranteedRef {
            $0.references.subtract(references, ordering: .acquiringAndReleasing).newValue
        }
        guard remaining == 0 else { return }
        count.release()
        free(block)
    }
}

/// The reference count at the head of a ``PayloadArena`` block.
private final class BlockReferenceCount: Sendable {
    let references: Atomic<Int>

    init(_ references: Int) {
        self.references = Atomic(references)
    }
}
