import ArgumentParser
import WebSocketStreams

/// `wsdump`'s Compression options: what permessage-deflate offers.
struct CompressionOptions: ParsableArguments {
    @Flag(name: [.customLong("no-compress"), .customLong("no-compression")], help: "Do not offer permessage-deflate compression.")
    var noCompression = false

    @Option(name: .customLong("client-max-window-bits"), help: ArgumentHelp("Offer client_max_window_bits=N (8-15): the window this client compresses with.", valueName: "bits"))
    var clientMaxWindowBits: Int?

    @Option(name: .customLong("server-max-window-bits"), help: ArgumentHelp("Offer server_max_window_bits=N (8-15): the window the server may compress with.", valueName: "bits"))
    var serverMaxWindowBits: Int?

    @Flag(name: .customLong("client-no-context-takeover"), help: "Offer client_no_context_takeover: compress every message with an empty window.")
    var clientNoContextTakeover = false

    @Flag(name: .customLong("server-no-context-takeover"), help: "Ask the server for server_no_context_takeover.")
    var serverNoContextTakeover = false

    /// Sets `configuration.compression`.
    func apply(to configuration: inout WebSocketConfiguration) {
        configuration.compression = WebSocketCompression(isEnabled: !noCompression)
        configuration.compression.clientMaxWindowBits = clientMaxWindowBits
        configuration.compression.serverMaxWindowBits = serverMaxWindowBits
        configuration.compression.clientNoContextTakeover = clientNoContextTakeover
        configuration.compression.serverNoContextTakeover = serverNoContextTakeover
    }
}
