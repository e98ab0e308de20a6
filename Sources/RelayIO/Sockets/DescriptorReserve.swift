import Glibc
import Synchronization

/// One descriptor held back for when the process runs out (EMFILE): a listener then frees
/// it, accepts the waiting connection into it, refuses that connection with a clear answer
/// and closes it, and takes the descriptor back. Without it a full process can only stop
/// watching its listeners for a while, and every client waits in the backlog for nothing.
public final class DescriptorReserve: Sendable {
    private let spare: Mutex<Int32>

    public init() {
        spare = Mutex(Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC))
    }

    deinit {
        spare.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
        }
    }

    /// Frees the held descriptor, runs `body` (which may open one descriptor and must close
    /// it before it returns), then holds one again. False, without running `body`, when none
    /// was held (another process took the last one meanwhile).
    public func spend(_ body: () -> Void) -> Bool {
        spare.withLock { fd in
            guard fd >= 0 else {
                fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
                return false
            }
            Glibc.close(fd)
            body()
            fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
            return true
        }
    }
}
