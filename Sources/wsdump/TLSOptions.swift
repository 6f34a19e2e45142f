import ArgumentParser
import Foundation
import WebSocketStreams

/// `wsdump`'s TLS options: how `wss://` trusts the server and presents itself.
struct TLSOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Accept any server certificate (self-signed, expired, other host).")
    var nocert = false

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("A PEM file of CA certificates to trust besides the system's.", valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("A PEM client certificate to present (with --key).", valueName: "path"))
    var cert: String?

    @Option(help: ArgumentHelp("The PEM private key of --cert.", valueName: "path"))
    var key: String?

    @Option(help: ArgumentHelp("A public-key pin the server's chain must hold (as curl's --pinnedpubkey); repeatable.", valueName: "sha256/BASE64"))
    var pin: [String] = []

    @Option(help: ArgumentHelp("The TLS server name to send and verify, when it is not the URL's host.", valueName: "name"))
    var servername: String?

    /// Sets `configuration.tls`, or throws a `ValidationError` saying what is wrong.
    func apply(to configuration: inout WebSocketConfiguration) throws {
        configuration.tls.allowUntrustedCertificates = nocert
        configuration.tls.trustedCAFile = caFile
        configuration.tls.clientCertificateFile = cert
        configuration.tls.clientKeyFile = key
        configuration.tls.pinnedPublicKeys = pin
        configuration.tls.serverName = servername
        guard (cert == nil) == (key == nil) else { throw ValidationError("--cert and --key must be given together") }
    }

    /// The files these options name, which must be readable.
    var files: [String] { [caFile, cert, key].compactMap(\.self) }
}
