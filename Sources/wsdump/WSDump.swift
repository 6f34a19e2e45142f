import ArgumentParser

/// Placeholder; the wsdump inspector lands here.
@main
struct WSDump: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "wsdump", abstract: "WebSocket inspector (in progress).")

    func run() async throws {}
}
