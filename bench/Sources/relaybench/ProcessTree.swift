#if canImport(Glibc)
import Glibc
#endif

/// Memory and CPU of a process and all its descendants, from /proc: a peer that forks
/// workers is charged for all of them.
enum ProcessTree {
    /// The pid and every descendant, found by scanning /proc/<n>/stat parent ids.
    static func members(of root: Int32) -> [Int32] {
        var parentOf: [Int32: Int32] = [:]
        if let dir = opendir("/proc") {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard let pid = Int32(name), let stat = readFile("/proc/\(pid)/stat") else { continue }
                let fields = statFields(stat)
                if fields.count > 1, let parent = Int32(fields[1]) { parentOf[pid] = parent }
            }
        }
        var result = [root]
        var frontier = [root]
        while let next = frontier.popLast() {
            for (pid, parent) in parentOf where parent == next {
                result.append(pid)
                frontier.append(pid)
            }
        }
        return result
    }

    /// Sum of VmRSS (bytes) over the tree; nil if the root is gone.
    static func rssBytes(of root: Int32) -> Int? {
        var total = 0
        var sawRoot = false
        for pid in members(of: root) {
            guard let status = readFile("/proc/\(pid)/status") else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
                let number = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
                if let kib = number.flatMap({ Int($0) }) {
                    total += kib * 1024
                    if pid == root { sawRoot = true }
                }
            }
        }
        return sawRoot ? total : nil
    }

    /// User+system CPU seconds over the tree.
    static func cpuSeconds(of root: Int32) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for pid in members(of: root) {
            guard let stat = readFile("/proc/\(pid)/stat") else { continue }
            let fields = statFields(stat)
            // statFields starts at field 3 (state); utime and stime are fields 14 and 15.
            if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
                total += (user + system) / ticks
            }
        }
        return total
    }

    /// Fields of /proc/PID/stat after the parenthesised command name (which may hold spaces).
    private static func statFields(_ stat: String) -> [Substring] {
        guard let close = stat.lastIndex(of: ")") else { return [] }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
