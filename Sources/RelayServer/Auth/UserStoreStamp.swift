#if canImport(Glibc)
import Glibc
#endif

/// What identifies one version of the user store file without reading it: inode, size,
/// mtime, ctime, and SQLite's file change counter (header bytes 24..<28, which every
/// rollback-journal commit increments). The counter catches two commits inside one mtime
/// tick that leave the size unchanged, such as two password changes.
struct UserStoreStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: timespec
    var changed: timespec
    var changeCounter: UInt32

    /// The stamp of the file at `path`, or nil when it does not exist (or cannot be read,
    /// which a reload then reports).
    static func read(_ path: String) -> UserStoreStamp? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        var header = [UInt8](repeating: 0, count: 4)
        let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 4, 24) }
        let counter = n == 4 ? header.reduce(0) { $0 << 8 | UInt32($1) } : 0
        return UserStoreStamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                              modified: info.st_mtim, changed: info.st_ctim, changeCounter: counter)
    }

    static func == (a: UserStoreStamp, b: UserStoreStamp) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
            && a.changeCounter == b.changeCounter
    }
}
