import Glibc

/// How a reaped child ended, worded for logs.
public enum ChildExit: Sendable, Equatable, CustomStringConvertible {
    /// It exited with this status.
    case exited(status: Int32)
    /// A signal ended it (SIGKILL when it was still running at its reaping).
    case killed(signal: Int32)
    /// Someone else collected it first (SIGCHLD set to SIG_IGN): nothing to tell.
    case unknown

    /// As logs say it: `exit status 3`, `killed by signal 9`.
    public var description: String {
        switch self {
        case .exited(let status): "exit status \(status)"
        case .killed(let signal): "killed by signal \(signal)"
        case .unknown: "exit status unknown"
        }
    }

    /// Collects the child's exit status so it leaves no zombie. One that has not exited yet
    /// is killed first: its owner is done with it, and SIGKILL makes the wait that follows
    /// short.
    static func reap(_ pid: pid_t) -> ChildExit {
        var status: Int32 = 0
        var reaped = waitpid(pid, &status, WNOHANG)
        if reaped == 0 {
            kill(pid, SIGKILL)
            reaped = retryingInterruptions { waitpid(pid, &status, 0) }
        }
        // ECHILD: someone set SIGCHLD to SIG_IGN and the kernel reaped it already.
        guard reaped == pid else { return .unknown }
        let signal = status & 0x7f
        if signal == 0 { return .exited(status: (status >> 8) & 0xff) }
        return .killed(signal: signal)
    }
}
