import CLibWebSockets

/// What both fuzz targets share: reading configuration from the front of the input,
/// cutting the rest into fuzz-chosen chunks, and failing loudly.

/// Reads a fuzz input from the front: configuration bytes first, then the chunk plan, then
/// the bytes under test. Bytes asked for past the end read as zero, so every input is valid.
struct FuzzInput {
    /// What has not been read yet.
    private(set) var remaining: UnsafeRawBufferPointer

    /// The input libFuzzer handed to `LLVMFuzzerTestOneInput`.
    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        remaining = UnsafeRawBufferPointer(start: data, count: size)
    }

    /// The next byte, or 0 when the input is used up.
    mutating func byte() -> UInt8 {
        guard let first = remaining.first else { return 0 }
        remaining = UnsafeRawBufferPointer(rebasing: remaining[1...])
        return first
    }

    /// A ``ChunkPlan`` read from the input: one byte giving the number of sizes (1 to 8),
    /// then that many sizes of one byte each.
    mutating func chunkPlan() -> ChunkPlan {
        let count = Int(byte() & 7) + 1
        return ChunkPlan(sizes: (0..<count).map { _ in Int(byte()) })
    }
}

/// How a byte stream is cut into reads: chunk sizes used in turn, over and over. A size of
/// 0 is an empty read; a plan of zeros only cuts the stream into single bytes.
struct ChunkPlan {
    /// The chunk sizes, used cyclically.
    let sizes: [Int]

    /// `bytes` cut into views of the planned sizes (the last one possibly shorter).
    func chunks(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        let sizes = self.sizes.contains { $0 > 0 } ? self.sizes : [1]
        var chunks: [UnsafeRawBufferPointer] = []
        var start = 0
        var turn = 0
        while start < bytes.count {
            let end = min(start + sizes[turn % sizes.count], bytes.count)
            chunks.append(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            start = end
            turn += 1
        }
        return chunks
    }
}

/// Stops the process with `message` when `condition` is false. Unlike `precondition`, the
/// message is printed in optimized builds too, so a crash report says what went wrong.
func check(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
    if !condition { fatalError("fuzz check failed: \(message())", file: file, line: line) }
}

/// SHA-1 from OpenSSL's libcrypto, as the client hands it to the codec (`Crypto.sha1`):
/// WebSocketCore computes no digest of its own.
func sha1(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
        digest.withUnsafeMutableBufferPointer { output in
            EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha1(), nil)
        }
    }
    check(ok == 1, "libcrypto could not compute SHA-1")
    return Array(digest.prefix(Int(length)))
}
