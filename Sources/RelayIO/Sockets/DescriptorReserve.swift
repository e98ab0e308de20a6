import Glibc
import Synchronization

/// One descriptor held back for when the process runs out (EMFILE): a listener then frees
/// it, accepts the waiting connection into it, refuses that connection with a clear answer
/// and closes it, and takes the descriptor back. Without it a full process can only stop
/// watching its listeners for a while, and every client waits in the backlog for nothing.
///
/// Every accept of the listeners sharing a reserve runs under its lock, the system call
/// included: otherwise another loop's accept could take the descriptor the reserve just
/// freed, and the reserve would be lost until something closed. The lock is contended only
/// when two loops accept at the same moment, and then for one accept4.
public final class DescriptorReserve: Sendable {
    /// What one accept under the reserve came to.
    public enum Outcome {
        /// A connection to keep.
        case accepted(Int32)
        /// Out of descriptors: a connection was accepted into the reserve and refused.
        case refused
        /// Nothing accepted; the errno (EAGAIN when the backlog is empty).
        case failed(Int32)
    }

    private let spare: Mutex<Int32>

    public init() {
        spare = Mutex(Self.hold())
    }

    deinit {
        spare.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
        }
    }

    /// Runs `accept` (one accept4: a descriptor, or -1 with errno set) under the lock. Out of
    /// descriptors, with one held: frees it, runs `accept` again and hands what it got to
    /// `refuse`, which must close it before it returns, then holds one again.
    public func accept(_ accept: () -> Int32, refuse: (Int32) -> Void) -> Outcome {
        spare.withLock { held in
            let fd = accept()
            if fd >= 0 { return .accepted(fd) }
            let code = errno
            guard code == EMFILE || code == ENFILE else { return .failed(code) }
            if held < 0 { held = Self.hold() }
            guard held >= 0 else { return .failed(code) }
            Glibc.close(held)
            let refused = accept()
            let again = errno
            if refused >= 0 { refuse(refused) }
            held = Self.hold()
            return refused >= 0 ? .refused : .failed(again)
        }
    }

    private static func hold() -> Int32 {
        Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
    }
}
