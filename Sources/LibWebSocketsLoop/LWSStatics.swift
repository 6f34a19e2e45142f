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

    /// A protocol table with one protocol (all callbacks go to `eventLoopThreadCallback`)
    /// followed by the zeroed terminator lws requires.
    ///
    /// `sendLimit` is the most lws hands to one `send()`; lws's default (the receive
    /// buffer size, 4 KiB) would turn every larger frame into a partial write.
    package static func makeProtocolTable(name: String, receiveBufferSize: Int, sendLimit: Int) -> UnsafeMutablePointer<lws_protocols> {
        let table = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
        table.initialize(repeating: lws_protocols(), count: 2)
        table[0].name = immortalCString(name)
        table[0].callback = eventLoopThreadCallback
        table[0].per_session_data_size = 0
        table[0].rx_buffer_size = receiveBufferSize
        table[0].tx_packet_size = sendLimit
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
}

/// Calls `body` with a C string for `string`, or `nil`.
package func withOptionalCString<Result>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
