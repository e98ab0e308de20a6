import Glibc

/// Whether a descriptor is the stream systemd connected to journald.
///
/// systemd sets `JOURNAL_STREAM=<device>:<inode>` (decimal) for a service whose stdout or
/// stderr goes to the journal. The variable is inherited by everything the service starts,
/// whatever that process's own stderr is, so it only counts when the descriptor's `fstat`
/// names the same device and inode (systemd.exec(5), sd_journal_stream_fd(3)).
public enum JournalStream {
    /// This process's stderr, decided once: the descriptor does not change while it runs.
    public static let standardErrorIsJournal: Bool = {
        let variable = getenv("JOURNAL_STREAM").map { String(cString: $0) }
        return describes(fd: STDERR_FILENO, journalStream: variable)
    }()

    /// Whether `fd` is the stream `journalStream` (a `JOURNAL_STREAM` value) names.
    public static func describes(fd: Int32, journalStream: String?) -> Bool {
        guard let journalStream else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return matches(journalStream, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Whether `value` is exactly `<device>:<inode>` in decimal for these numbers; anything
    /// malformed is not the journal.
    static func matches(_ value: String, device: UInt64, inode: UInt64) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let streamDevice = decimal(parts[0]), let streamInode = decimal(parts[1]) else {
            return false
        }
        return streamDevice == device && streamInode == inode
    }

    private static func decimal(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt64(text)
    }
}
