import Glibc

/// Writes to stdout, stderr or a file descriptor, whole, retrying short writes.
enum ClientToolOutput {
    static func error(_ text: String) {
        _ = write(STDERR_FILENO, Array((text.hasSuffix("\n") ? text : text + "\n").utf8))
    }

    /// False when the descriptor refused the bytes (a closed pipe, a full disk).
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
