import Glibc

/// The process's resident set size in bytes, from /proc/self/statm.
func residentMemoryBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var size = 0
    var resident = 0
    guard fscanf_two(file, &size, &resident) else { return 0 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}

private func fscanf_two(_ file: UnsafeMutablePointer<FILE>, _ first: inout Int, _ second: inout Int) -> Bool {
    var buffer = [CChar](repeating: 0, count: 256)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return false }
    let fields = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }.split(separator: " ")
    guard fields.count >= 2, let a = Int(fields[0]), let b = Int(fields[1]) else { return false }
    first = a
    second = b
    return true
}

/// Open file descriptors of the process.
func openFileDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count - 3  // ".", ".." and the directory's own descriptor
}
