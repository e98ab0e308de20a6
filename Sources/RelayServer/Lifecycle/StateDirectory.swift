import Glibc
import RelayIO

/// The state directory holds the audit trail: created 0700 if missing, never world-readable.
enum StateDirectory {
    static func prepare(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw IOError("mkdir \(path)", errno: errno)
        }
    }

    /// Takes the directory for this process alone (`flock` on `dynrelay.lock`, held until
    /// exit): a second `dynrelay serve` on the same state would take the first one's open
    /// streams for a crash's and close them as `relay-crashed`, and write the same chain
    /// from two processes. Returns the lock's descriptor, to be kept open.
    static func lock(_ path: String) throws -> Int32 {
        let lockPath = path + "/dynrelay.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw IOError("open \(lockPath)", errno: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw StateDirectoryBusy(path: path, lockPath: lockPath, errno: code)
        }
        return fd
    }
}

/// Another process holds the state directory.
struct StateDirectoryBusy: Error, CustomStringConvertible {
    let path: String
    let lockPath: String
    let errno: Int32

    var description: String {
        errno == EWOULDBLOCK
            ? "another dynrelay serve is using the state directory \(path) (it holds \(lockPath))"
            : "cannot lock \(lockPath): \(String(cString: strerror(errno)))"
    }
}
