import CLibWebSockets
import SynchronizationSupport

/// Creates libwebsockets contexts without breaking the TLS connections of the others.
///
/// lws 4.1.6 keeps the `SSL` ex-data index it stores each connection's wsi under in one
/// process-global variable, and every `lws_create_context` given
/// `LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT` allocates a fresh index and overwrites it
/// (measured by disassembly: two `CRYPTO_get_ex_new_index` calls per context). A TLS
/// handshake in flight on another context then looks its wsi up under the new index,
/// finds nothing, and fails with an empty OpenSSL error ("error:00000001").
///
/// So only the first context of the process runs that init; every context is created
/// with explicit vhosts, and its default vhost is added with `lws_create_vhost`, which
/// builds the vhost's `SSL_CTX` (it needs the option on the vhost) but never touches
/// the index.
package enum LWSContextFactory {
    /// Whether a context already ran lws's OpenSSL library init; also serialises that
    /// init, so no two contexts allocate indices at once.
    private static let libraryInitialised = AnnotatedMutex(false)

    /// Makes the context described by `info` run on the libev loop in `loops` (a
    /// one-element array its thread keeps while the context lives), through lws's libev
    /// plugin (`libwebsockets-evlib-ev`).
    package static func runOnForeignLoop(_ info: inout lws_context_creation_info, _ loops: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        info.options |= UInt64(LWS_SERVER_OPTION_LIBEV)
        info.foreign_loops = loops
    }

    /// A context plus its default vhost described by `info` (vhost fields included), or
    /// nil if either could not be created. `usesTLS: false` (the client, whose TLS is
    /// its own) keeps lws's OpenSSL setup out of the context and its vhost entirely.
    package static func makeContext(
        _ info: inout lws_context_creation_info, usesTLS: Bool = true
    ) -> (context: OpaquePointer, vhost: OpaquePointer)? {
        let globalInit = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
        var contextInfo = info
        contextInfo.port = CONTEXT_PORT_NO_LISTEN
        contextInfo.options = (info.options & ~globalInit) | UInt64(LWS_SERVER_OPTION_EXPLICIT_VHOSTS)
        var context: OpaquePointer?
        // lws logs as it creates a context: its lines wait until the lock is released.
        LWSLogging.holdingLines {
            libraryInitialised.withLock { initialised in
                if usesTLS, !initialised { contextInfo.options |= globalInit }
                context = lws_create_context(&contextInfo)
                if context != nil, usesTLS { initialised = true }
            }
        }
        guard let context else { return nil }
        if usesTLS { info.options |= globalInit } else { info.options &= ~globalInit }
        guard let vhost = lws_create_vhost(context, &info) else {
            lws_context_destroy(context)
            return nil
        }
        return (context, vhost)
    }
}
