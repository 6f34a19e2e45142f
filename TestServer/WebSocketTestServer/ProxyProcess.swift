import Foundation
import Glibc
import Synchronization

/// A real proxy server from the system's packages, started on a free loopback port for a
/// test and stopped with it: tinyproxy (an HTTP `CONNECT` proxy) or microsocks (SOCKS5,
/// optionally with a user name and password). `make test` installs both.
package final class ProxyProcess: Sendable {
    package enum Kind: Sendable {
        /// tinyproxy: `http://127.0.0.1:port`.
        case tinyproxy
        /// microsocks: `socks5://127.0.0.1:port`, requiring `credentials` when given.
        case microsocks(credentials: (user: String, password: String)?)
    }

    /// The port it listens on (loopback only).
    package let port: Int
    private let processID: pid_t
    private let directory: String
    private let logFile: String

    /// The executable for `kind`, if installed.
    package static func executable(for kind: Kind) -> String? {
        let name: String
        switch kind {
        case .tinyproxy: name = "tinyproxy"
        case .microsocks: name = "microsocks"
        }
        for folder in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] where access("\(folder)/\(name)", X_OK) == 0 {
            return "\(folder)/\(name)"
        }
        return nil
    }

    /// Starts the proxy and returns once it accepts connections.
    package init(_ kind: Kind) async throws {
        guard let executable = Self.executable(for: kind) else {
            throw TestServerError.couldNotListen("\(kind) is not installed (apt-get install tinyproxy microsocks)")
        }
        directory = NSTemporaryDirectory() + "proxy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        logFile = directory + "/log"
        port = try Self.freePort()
        let arguments: [String]
        switch kind {
        case .tinyproxy:
            let configuration = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                MaxClients 64
                Allow 127.0.0.1
                LogLevel Connect
                LogFile "\(logFile)"

                """
            try configuration.write(toFile: directory + "/tinyproxy.conf", atomically: true, encoding: .utf8)
            arguments = ["-d", "-c", directory + "/tinyproxy.conf"]
        case .microsocks(let credentials):
            var list = ["-i", "127.0.0.1", "-p", "\(port)"]
            if let credentials { list += ["-u", credentials.user, "-P", credentials.password] }
            arguments = list
        }
        processID = try Self.spawn(executable, arguments)
        let deadline = ContinuousClock.now + .seconds(5)
        while !Self.accepts(port: port) {
            guard kill(processID, 0) == 0, ContinuousClock.now < deadline else {
                stop()
                throw TestServerError.couldNotListen("\(kind) on 127.0.0.1:\(port)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// What tinyproxy logged so far (its `CONNECT` lines among them); empty for microsocks.
    package var log: String {
        (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
    }

    /// Ends the proxy (SIGKILL: a test runner's threads may block SIGTERM for their
    /// children) and removes its files. Calling it again does nothing.
    package func stop() {
        let wasRunning = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard wasRunning else { return }
        kill(processID, SIGKILL)
        var status: Int32 = 0
        while waitpid(processID, &status, 0) < 0, errno == EINTR {}
        try? FileManager.default.removeItem(atPath: directory)
    }

    private let stopped = Mutex(false)

    /// Starts `executable` with `arguments`, its output discarded and its signals reset
    /// (the test runner's blocked signals are not inherited).
    private static func spawn(_ executable: String, _ arguments: [String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var processID: pid_t = 0
        let result = posix_spawn(&processID, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw TestServerError.couldNotListen("\(executable): \(String(cString: strerror(result)))") }
        return processID
    }

    deinit { stop() }

    /// A port nothing listened on a moment ago (bound to port 0, then released).
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw TestServerError.couldNotListen("127.0.0.1:0") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a TCP connect to the loopback port succeeds now.
    private static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
