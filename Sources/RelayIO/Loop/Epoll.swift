import CRelayShims
import Glibc

/// One loop's epoll instance: its interest list and the wait for events. An entry carries
/// its registration's token (0 for the loop's wake-up descriptor), never a pointer, so an
/// event that outlived its registration finds nothing instead of freed memory.
struct Epoll {
    enum Operation: Int32 {
        case add = 1
        case delete = 2
        case modify = 3
    }

    let fd: Int32

    init() {
        fd = crelay_epoll_create()
        precondition(fd >= 0, "cannot create an epoll instance: errno \(errno)")
    }

    /// Adds, changes or removes the entry of `target`: 0, or the errno a caller may act on
    /// (ENOENT, EEXIST, EINVAL, EPERM). A bad descriptor is a bug and stops the process.
    @discardableResult
    func control(_ operation: Operation, _ target: Int32, events: UInt32, token: UInt64) -> Int32 {
        do throws(IOError) {
            switch try systemCall("epoll_ctl", { crelay_epoll_ctl(fd, operation.rawValue, target, events, token) }) {
            case .processed: return 0
            case .wouldBlock: return EAGAIN
            }
        } catch {
            return error.errno
        }
    }

    /// One epoll_wait into `tokens` and `events` (parallel, of equal size), for at most
    /// `timeout` milliseconds (-1: until an event): the count, or -1 with errno set, as the
    /// system call returns them, for `systemCall` to interpret.
    func wait(tokens: inout [UInt64], events: inout [UInt32], timeout: Int32) -> Int32 {
        crelay_epoll_wait(fd, &tokens, &events, Int32(tokens.count), timeout)
    }
}
