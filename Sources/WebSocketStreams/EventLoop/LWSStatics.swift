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

    /// A protocol table with one protocol (all callbacks go to `ServiceThread.protocolCallback`)
    /// followed by the zeroed terminator lws requires.
    package static func makeProtocolTable(name: String, receiveBufferSize: Int) -> UnsafeMutablePointer<lws_protocols> {
        let table = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        table.initialize(repeating: lws_protocols(), count: 2)
        table[0].name = immortalCString(name)
        table[0].callback = serviceThreadCallback
        table[0].per_session_data_size = 0
        table[0].rx_buffer_size = receiveBufferSize
        return table
    }

    /// The permessage-deflate extension table (RFC 7692), offering
    /// `client_max_window_bits`, then the zeroed terminator.
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    package nonisolated(unsafe) static let deflateExtensions: UnsafeMutablePointer<lws_extension> = {
        let table = UnsafeMutablePointer<lws_extension>.allocate(capacity: 2)
        table.initialize(repeating: lws_extension(), count: 2)
        table[0].name = immortalCString("permessage-deflate")
        table[0].callback = lws_extension_callback_pm_deflate
        table[0].client_offer = immortalCString("permessage-deflate; client_max_window_bits")
        return table
    }()

    /// A retry policy that turns libwebsockets' own idle pings off: connections do their
    /// own keep-alive with sub-second resolution and a typed error on a missed pong.
    // nonisolated(unsafe): written once while initialised, then only read (by lws).
    package nonisolated(unsafe) static let noValidityPings: UnsafeMutablePointer<lws_retry_bo_t> = {
        let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
        policy.initialize(to: lws_retry_bo_t())
        return policy
    }()
}
