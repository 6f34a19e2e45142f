import Glibc

/// What this process holds right now, read from `/proc/self`.
public enum ProcessResources {
    /// Resident set size in KiB (`/proc/self/statm`, second field), or 0 if unreadable.
    public static func residentKilobytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0
        var resident = 0
        guard readTwoIntegers(file, &size, &resident) else { return 0 }
        return resident * (sysconf(Int32(_SC_PAGESIZE)) / 1024)
    }

    /// Open file descriptors (entries of `/proc/self/fd`, minus the one listing it).
    public static func openDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != ".." { count += 1 }
        }
        return max(0, count - 1)
    }

    /// Reads the first two whitespace-separated integers of the next line of `file`.
    private static func readTwoIntegers(_ file: UnsafeMutablePointer<FILE>, _ first: inout Int, _ second: inout Int) -> Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return false }
        let line = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard fields.count >= 2 else { return false }
        first = fields[0]
        second = fields[1]
        return true
    }
}

extension ProcessResources {
    /// Raises the soft limit on open descriptors to the hard limit (W5 opens a thousand
    /// sockets); returns the soft limit now in force.
    @discardableResult
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }

    /// User plus system CPU time this process has used, in seconds.
    public static func cpuSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

extension ProcessResources {
    /// The most this process has held resident (`VmHWM` of `/proc/self/status`), in KiB,
    /// since it started or since ``resetPeakResident()``; 0 if unreadable.
    public static func peakResidentKilobytes() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            guard line.hasPrefix("VmHWM:") else { continue }
            return line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        }
        return 0
    }

    /// Makes the peak resident size start again from the current one (writes 5 to
    /// `/proc/self/clear_refs`); returns whether the kernel allowed it.
    @discardableResult
    public static func resetPeakResident() -> Bool {
        guard let file = fopen("/proc/self/clear_refs", "w") else { return false }
        defer { fclose(file) }
        return fputs("5", file) >= 0
    }
}

extension ProcessResources {
    /// TCP payload bytes over every TCP socket this process has open: sent and acknowledged
    /// (`tcpi_bytes_acked`, which also counts the SYN) and received (`tcpi_bytes_received`),
    /// from Linux's `TCP_INFO`. Take two readings and subtract: what went over the wire
    /// between them, frame headers included, TCP/IP headers not.
    public static func tcpPayloadBytes() -> (sent: Int, received: Int) {
        guard let directory = opendir("/proc/self/fd") else { return (0, 0) }
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            // Up to the name's NUL only: a record can end before d_name's 256 bytes do, at the
            // end of the kernel's buffer (copying the whole field faulted there).
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if let descriptor = Int32(name) { descriptors.append(descriptor) }
        }
        closedir(directory)
        var sent = 0
        var received = 0
        for descriptor in descriptors {
            // struct tcp_info up to tcpi_bytes_received (a kernel ABI; offsets below).
            var info = [UInt8](repeating: 0, count: 232)
            var length = socklen_t(info.count)
            let result = info.withUnsafeMutableBytes {
                getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length)
            }
            guard result == 0, Int(length) >= bytesReceivedOffset + 8 else { continue }
            info.withUnsafeBytes {
                sent += Int(truncatingIfNeeded: $0.loadUnaligned(fromByteOffset: bytesAckedOffset, as: UInt64.self))
                received += Int(truncatingIfNeeded: $0.loadUnaligned(fromByteOffset: bytesReceivedOffset, as: UInt64.self))
            }
        }
        return (sent, received)
    }

    /// `offsetof(struct tcp_info, tcpi_bytes_acked)` and `tcpi_bytes_received` in `<linux/tcp.h>`.
    private static let bytesAckedOffset = 120
    private static let bytesReceivedOffset = 128
}
