import WebSocketCore

/// The codec a successful opening handshake sets up: the ``FrameWriter`` for what goes out
/// (compressing when permessage-deflate was agreed and this side may compress) and the
/// ``MessageAssembler`` for what comes in (inflating when agreed). The transport and
/// ``ClientEngine`` both build it here, so production and the simulator run the same codec.
struct NegotiatedCodec {
    var writer: FrameWriter
    var assembler: MessageAssembler

    /// The codec for what the server agreed to in `negotiated`, under `configuration`.
    ///
    /// - Parameter keys: Where frame masks come from (the CSPRNG unless a test seeds it).
    /// - Throws: The error the handshake fails with when the server's permessage-deflate
    ///   answer is invalid.
    init(
        negotiated: NegotiatedHandshake, configuration: WebSocketConfiguration, keys: MaskingKeySource = MaskingKeySource()
    ) throws(WebSocketError) {
        var inflater: MessageInflater?
        var deflater: MessageDeflater?
        let compression = configuration.compression
        if let extensions = negotiated.extensions {
            do {
                let parameters = try DeflateParameters(negotiating: extensions, offer: DeflateOffer(compression))
                inflater = MessageInflater(parameters: parameters, releasesWhenIdle: compression.releasesMemoryWhenIdle)
                if MessageDeflater.canCompress(with: parameters) {
                    deflater = try? MessageDeflater(
                        parameters: parameters, level: compression.level, memoryLevel: compression.memoryLevel,
                        releasesWhenIdle: compression.releasesMemoryWhenIdle)
                }
            } catch {
                throw .connectionFailed("the server's permessage-deflate answer is invalid: \(error)")
            }
        }
        writer = FrameWriter(
            deflater: deflater, threshold: deflater == nil ? FrameWriter.defaultCompressionThreshold : compression.threshold,
            keys: keys)
        assembler = MessageAssembler(
            maxMessageSize: configuration.maxMessageSize, maxFragments: configuration.maxFragmentsPerMessage, inflater: inflater,
            streaming: configuration.streamsIncomingMessages
                ? MessageAssembler.Streaming(maxMessageSize: configuration.maxStreamedMessageSize ?? .max) : nil)
    }
}
