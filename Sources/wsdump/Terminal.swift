import Glibc
import SynchronizationSupport

/// The controlling terminal: which standard streams are terminals, their width, and raw
/// mode for the line editor.
///
/// Raw mode turns off echo, line buffering and the signal keys (so Ctrl-C reaches wsdump as
/// a byte) but keeps output processing (`\n` still starts a new line). The settings it
/// replaced are restored by ``restore()``, which runs on every way out: the session's end,
/// the signals wsdump handles, and `exit` (an `atexit` handler).
enum Terminal {
    /// Whether `descriptor` is a terminal.
    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// The terminal's width in columns, when `descriptor` is a terminal that knows it.
    static func columns(of descriptor: Int32) -> Int? {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(descriptor, UInt(TIOCGWINSZ), $0) }
        guard result == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Puts standard input in raw mode. Returns `false` when it is not a terminal.
    @discardableResult
    static func enterRawMode() -> Bool {
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return false }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | INLCR | IGNCR | BRKINT | INPCK | ISTRIP)
        withUnsafeMutableBytes(of: &raw.c_cc) { controlCharacters in
            controlCharacters[Int(VMIN)] = 1
            controlCharacters[Int(VTIME)] = 0
        }
        savedSettings.withLock { saved in
            if saved == nil { saved = original }
        }
        _ = restoreAtExit
        // TCSANOW keeps what was typed ahead while wsdump was connecting.
        return tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0
    }

    /// Restores the settings raw mode replaced; does nothing when raw mode is off.
    static func restore() {
        guard var original = savedSettings.withLock({ saved -> termios? in
            defer { saved = nil }
            return saved
        }) else { return }
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }

    /// Registers ``restore()`` with `atexit`, once.
    private static let restoreAtExit: Void = {
        atexit { Terminal.restore() }
    }()

    /// The settings before raw mode, while it is on.
    private static let savedSettings = AnnotatedMutex<termios?>(nil)
}
