/// Decompresses the payloads of permessage-deflate messages (RFC 7692) for
/// ``MessageAssembler``: the assembler decides when a payload is compressed and where a
/// message ends; the compression layer (`Compression/MessageInflater.swift`, on zlib) does
/// the work. The protocol's codecs call no C themselves.
package protocol MessageDecompressor: AnyObject {
    /// Decompresses `input` (part of one message's payload), appending to `output`, which
    /// never grows past `limit` bytes.
    func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) -> DecompressionOutcome
    /// The message's payload has all arrived: decompresses what is left (with the 4-octet
    /// tail RFC 7692 7.2.2 has the sender strip).
    func finishMessage(into output: inout [UInt8], limit: Int) -> DecompressionOutcome
    /// A read is used up between messages: memory that only a message in progress needs
    /// may be released (kept through the messages of one read, which come in bursts).
    func pausedBetweenMessages()
}

/// What decompressing part of a message came to.
package enum DecompressionOutcome: Sendable, Hashable {
    /// Everything given was decompressed and appended.
    case ok
    /// The message inflates to more than `limit` bytes; output holds at most `limit`.
    case tooLarge
    /// The compressed data is invalid; the text is zlib's reason or ours.
    case corrupt(String)
}
