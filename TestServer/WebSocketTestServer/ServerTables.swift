import CLibWebSockets
import LibWebSocketsLoop

/// The test server's own C tables, which libwebsockets keeps by pointer for the life of
/// a context: allocated once per process and never freed.
enum ServerTables {
    /// The permessage-deflate extension table (RFC 7692), then the zeroed terminator. Its
    /// callback sends empty messages uncompressed: lws 4.1.6 aborts the process
    /// compressing one (see `wss_is_empty_whole_message` in shim.h).
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    nonisolated(unsafe) static let deflateExtensions: UnsafeMutablePointer<lws_extension> = {
        let table = UnsafeMutablePointer<lws_extension>.allocate(capacity: 2)
        table.initialize(repeating: lws_extension(), count: 2)
        table[0].name = LWSStatics.immortalCString("permessage-deflate")
        table[0].callback = wss_server_pm_deflate
        table[0].client_offer = LWSStatics.immortalCString("permessage-deflate; client_max_window_bits")
        return table
    }()

    /// The server's vhost names (lws keeps them by pointer for the vhost's life: one
    /// allocation per process, not one per server).
    // nonisolated(unsafe), both: written once while initialised, then only read.
    nonisolated(unsafe) static let vhostName = LWSStatics.immortalCString("test-server")
    nonisolated(unsafe) static let unixVhostName = LWSStatics.immortalCString("test-server-unix")
}
