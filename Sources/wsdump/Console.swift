import Glibc
import SynchronizationSupport

/// Everything wsdump prints goes through here, so lines never interleave mid-way and the
/// prompt (or the upload progress line) stays intact at the bottom of the terminal.
///
/// The bottom line is the *footer*: the `> ` prompt with what is being typed, or the
/// upload progress bar. Printing a line while a footer shows clears the footer
/// (`\r ESC[2K`), prints the line, then draws the footer again, so messages appear above
/// what the user is typing without garbling it.
final class Console: Sendable {
    /// The bottom line of a terminal.
    struct Footer: Sendable, Equatable {
        /// The terminal descriptor it is drawn on.
        var descriptor: Int32
        /// What to write after clearing the line: text and cursor movements.
        var rendered: String
    }

    private let writer: OutputWriter
    private let footer = AnnotatedMutex<Footer?>(nil, rank: .consoleFooter)
    /// Whether standard output is a terminal.
    let outputIsTerminal: Bool
    /// Whether standard error is a terminal.
    let errorIsTerminal: Bool

    private static let clearLine = "\r\u{1B}[2K"

    /// A console over the process's standard output and error.
    ///
    /// - Parameter onOutputClosed: Called once standard output's reader has gone away.
    init(onOutputClosed: @escaping @Sendable () -> Void) {
        outputIsTerminal = Terminal.isTerminal(STDOUT_FILENO)
        errorIsTerminal = Terminal.isTerminal(STDERR_FILENO)
        writer = OutputWriter(onClosed: { descriptor in
            if descriptor == STDOUT_FILENO { onOutputClosed() }
        })
    }

    /// Prints `lines` (each ending with a newline) on standard output.
    func printData(_ lines: [String]) {
        emit(lines, to: STDOUT_FILENO)
    }

    /// Writes `bytes` on standard output as they are: no newline, no footer redraw
    /// (`--stream` printing a message piece by piece).
    func printRaw(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        writer.enqueue([OutputWriter.Chunk(STDOUT_FILENO, bytes)])
    }

    /// Prints `lines` on standard error.
    func printStatus(_ lines: [String]) {
        emit(lines, to: STDERR_FILENO)
    }

    /// Shows `newFooter` at the bottom (replacing the current one), or removes the footer.
    func setFooter(_ newFooter: Footer?) {
        footer.withLock { current in
            var chunks: [OutputWriter.Chunk] = []
            if let current, current.descriptor != newFooter?.descriptor {
                chunks.append(.init(current.descriptor, Self.clearLine))
            }
            if let newFooter {
                chunks.append(.init(newFooter.descriptor, Self.clearLine + newFooter.rendered))
            }
            current = newFooter
            writer.enqueue(chunks)
        }
    }

    /// Replaces the footer with `line`, which stays on screen, and removes the footer
    /// (e.g. a submitted input line, before the prompt is drawn anew).
    func commitFooter(as line: String) {
        footer.withLock { current in
            guard let footer = current else { return }
            writer.enqueue([.init(footer.descriptor, Self.clearLine + line + "\n")])
            current = nil
        }
    }

    /// Returns once everything printed so far has been written.
    func flush() async {
        await writer.flush()
    }

    /// Returns once the output has caught up enough to take more.
    func waitForRoom() async {
        await writer.waitForRoom()
    }

    private func emit(_ lines: [String], to descriptor: Int32) {
        guard !lines.isEmpty else { return }
        let text = lines.joined(separator: "\n") + "\n"
        let onTerminal = descriptor == STDOUT_FILENO ? outputIsTerminal : errorIsTerminal
        footer.withLock { footer in
            // The lock keeps the clear, the line and the redraw together and in order.
            guard let footer, onTerminal else {
                writer.enqueue([.init(descriptor, text)])
                return
            }
            writer.enqueue([
                .init(footer.descriptor, Self.clearLine),
                .init(descriptor, text),
                .init(footer.descriptor, footer.rendered),
            ])
        }
    }
}
