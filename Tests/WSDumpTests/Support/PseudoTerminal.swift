import Foundation
import Glibc

/// A pseudo-terminal pair, to run wsdump as if a person sat at a terminal.
///
/// The child gets the secondary side as standard input, output and error; the test writes
/// keys to the primary side and reads what the child draws from it.
struct PseudoTerminal: Sendable {
    /// The side the test reads and writes.
    let primary: Int32
    /// The side the child uses as its terminal.
    let secondary: Int32

    /// Opens a pair with a window of `columns` x `rows`.
    init(columns: UInt16 = 100, rows: UInt16 = 30) throws {
        // What posix_openpt, unlockpt and ptsname do on Linux (Glibc's Swift module lacks them).
        let primary = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard primary >= 0 else { throw TestFailure("cannot open /dev/ptmx: errno \(errno)") }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard withUnsafeMutablePointer(to: &unlock, { ioctl(primary, Self.unlockRequest, $0) }) == 0,
              withUnsafeMutablePointer(to: &number, { ioctl(primary, Self.numberRequest, $0) }) == 0 else {
            Glibc.close(primary)
            throw TestFailure("cannot unlock the pseudo-terminal: errno \(errno)")
        }
        let path = "/dev/pts/\(number)"
        let secondary = open(path, O_RDWR | O_NOCTTY)
        guard secondary >= 0 else {
            Glibc.close(primary)
            throw TestFailure("cannot open \(path): errno \(errno)")
        }
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = withUnsafeMutablePointer(to: &size) { ioctl(primary, UInt(TIOCSWINSZ), $0) }
        self.primary = primary
        self.secondary = secondary
    }

    /// Closes the test's side (the child's side is closed once the child has started).
    func close() {
        Glibc.close(primary)
    }

    /// `TIOCSPTLCK`, `_IOW('T', 0x31, int)`: (un)locks the secondary side. Not exported by Glibc's Swift module.
    private static let unlockRequest: UInt = 0x4004_5431
    /// `TIOCGPTN`, `_IOR('T', 0x30, unsigned int)`: the secondary side's number under /dev/pts.
    private static let numberRequest: UInt = 0x8004_5430

    /// Types `text` (bytes as a terminal sends them: `\r` for Enter, `\u{3}` for Ctrl-C).
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(primary, $0.baseAddress, $0.count) }
    }
}

/// A test setup problem, with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
