import ArgumentParser
import Foundation

/// The entry point: preprocesses Python-style arguments, parses them, runs the session and
/// maps every outcome to wsdump's exit codes (usage errors are 2, not ArgumentParser's 64).
@main
enum Main {
    static func main() async {
        let arguments = ArgumentPreprocessing.rewrite(Array(CommandLine.arguments.dropFirst()))
        do {
            let command = try WSDump.parse(arguments)
            try await command.run()
            exit(ExitStatus.normalClose.rawValue)
        } catch let exitCode as ExitCode {
            exit(exitCode.rawValue)
        } catch {
            let message = WSDump.fullMessage(for: error)
            if WSDump.exitCode(for: error) == .success {
                // --help: the help text on standard output, status 0.
                FileHandle.standardOutput.write(Data((message + "\n").utf8))
                exit(ExitStatus.normalClose.rawValue)
            }
            FileHandle.standardError.write(Data((message + "\n").utf8))
            exit(ExitStatus.usageError.rawValue)
        }
    }
}
