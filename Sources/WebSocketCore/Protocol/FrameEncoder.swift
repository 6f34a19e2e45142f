/// Writes client frames (RFC 6455 section 5.2): header and masked payload, straight into
/// the caller's output memory.
package enum FrameEncoder {
    /// The longest header: 2 bytes, an 8-byte length, a 4-byte masking key.
    package static let maxHeaderLength = 14

    /// The header length for a payload of `payloadLength` bytes, masking key included.
    package static func headerLength(payloadLength: Int) -> Int {
        switch payloadLength {
        case ..<126: 6
        case ..<65536: 8
        default: 14
        }
    }

    /// Writes a frame header at `destination`; returns its length.
    @discardableResult
    package static func writeHeader(
        into destination: UnsafeMutableRawPointer, opcode: FrameOpcode, isFinal: Bool,
        isCompressed: Bool = false, payloadLength: Int, key: MaskingKey
    ) -> Int {
        var first = opcode.rawValue
        if isFinal { first |= 0x80 }
        if isCompressed { first |= 0x40 }
        destination.storeBytes(of: first, as: UInt8.self)
        var length: Int
        switch payloadLength {
        case ..<126:
            destination.storeBytes(of: 0x80 | UInt8(payloadLength), toByteOffset: 1, as: UInt8.self)
            length = 2
        case ..<65536:
            destination.storeBytes(of: 0x80 | 126, toByteOffset: 1, as: UInt8.self)
            destination.storeBytes(of: UInt16(payloadLength).bigEndian, toByteOffset: 2, as: UInt16.self)
            length = 4
        default:
            destination.storeBytes(of: 0x80 | 127, toByteOffset: 1, as: UInt8.self)
            destination.storeBytes(of: UInt64(payloadLength).bigEndian, toByteOffset: 2, as: UInt64.self)
            length = 10
        }
        destination.storeBytes(of: key.bits, toByteOffset: length, as: UInt32.self)
        return length + 4
    }

    /// Writes a whole frame (header, then `payload` masked with `key`) at `destination`,
    /// which must have room for `headerLength(payloadLength:) + payload.count` bytes;
    /// returns its length.
    @discardableResult
    package static func writeFrame(
        into destination: UnsafeMutableRawPointer, opcode: FrameOpcode, isFinal: Bool = true,
        isCompressed: Bool = false, payload: UnsafeRawBufferPointer, key: MaskingKey
    ) -> Int {
        let header = writeHeader(
            into: destination, opcode: opcode, isFinal: isFinal, isCompressed: isCompressed,
            payloadLength: payload.count, key: key)
        key.copyMasked(payload, to: destination + header)
        return header + payload.count
    }

    /// A whole frame as bytes (control frames, tests).
    package static func frame(
        opcode: FrameOpcode, isFinal: Bool = true, isCompressed: Bool = false,
        payload: some Collection<UInt8>, key: MaskingKey
    ) -> [UInt8] {
        let payload = Array(payload)
        let length = headerLength(payloadLength: payload.count) + payload.count
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            initialized = payload.withUnsafeBytes {
                writeFrame(into: UnsafeMutableRawPointer(buffer.baseAddress!), opcode: opcode, isFinal: isFinal,
                           isCompressed: isCompressed, payload: $0, key: key)
            }
        }
    }
}
