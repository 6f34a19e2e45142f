import CLibWebSockets
import Glibc

/// C structures libwebsockets keeps by pointer for the life of a context: protocol and
/// extension tables, their name strings, and retry policies. Allocated once per process
/// and never freed, so no context can outlive them.
package enum LWSStatics {
    /// Copies `string` into memory that is never freed.
    package static func immortalCString(_ string: String) -> UnsafePointer<CChar> {
        UnsafePointer(strdup(string)!)
    }

    /// A protocol table with one protocol (all callbacks go to `serviceThreadCallback`)
    /// followed by the zeroed terminator lws requires.
    ///
    /// `sendLimit` is the most lws hands to one `send()`; lws's default (the receive
    /// buffer size, 4 KiB) would turn every larger frame into a partial write.
    package static func makeProtocolTable(name: String, receiveBufferSize: Int, sendLimit: Int) -> UnsafeMutablePointer<lws_protocols> {
        let table = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        table.initialize(repeating: lws_protocols(), count: 2)
        table[0].name = immortalCString(name)
        table[0].callback = serviceThreadCallback
        table[0].per_session_data_size = 0
        table[0].rx_buffer_size = receiveBufferSize
        table[0].tx_packet_size = sendLimit
        return table
    }

    /// The permessage-deflate extension table (RFC 7692) for the test server, then the
    /// zeroed terminator. Its callback sends empty messages uncompressed: lws 4.1.6 aborts
    /// the process compressing one (see `wss_is_empty_whole_message` in shim.h).
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    package nonisolated(unsafe) static let deflateExtensions = makeDeflateTable()

    private static func makeDeflateTable() -> UnsafeMutablePointer<lws_extension> {
        let table = UnsafeMutablePointer<lws_extension>.allocate(capacity: 2)
        table.initialize(repeating: lws_extension(), count: 2)
        table[0].name = immortalCString("permessage-deflate")
        table[0].callback = wss_server_pm_deflate
        table[0].client_offer = immortalCString("permessage-deflate; client_max_window_bits")
        return table
    }

    /// A retry policy that turns libwebsockets' own idle pings off: connections do their
    /// own keep-alive.
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    package nonisolated(unsafe) static let noValidityPings: UnsafeMutablePointer<lws_retry_bo_t> = {
        let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        policy.initialize(to: lws_retry_bo_t())
        return policy
    }()

    /// Vhost names, which lws keeps by pointer for the vhost's life: one allocation per
    /// process, not one per loop or vhost (which would leak once the context is gone).
    /// lws does not need them unique; the loops find their vhosts by their own keys.
    // nonisolated(unsafe), all three: written once while initialised, then only read.
    package nonisolated(unsafe) static let clientDefaultVhostName = immortalCString("client-default")
    /// The name of every vhost a client loop adds after its default one.
    package nonisolated(unsafe) static let clientVhostName = immortalCString("client")
    /// The test server's vhost.
    package nonisolated(unsafe) static let serverVhostName = immortalCString("test-server")
    package nonisolated(unsafe) static let serverUnixVhostName = immortalCString("test-server-unix")
}
