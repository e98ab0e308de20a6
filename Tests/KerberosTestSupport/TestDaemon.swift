import Foundation
import Glibc

/// A server a test fixture starts and must stop again (the throwaway KDC, a private
/// winbindd). It runs with an empty signal mask and default dispositions: Foundation's
/// `Process` passes on the spawning thread's mask, and test worker threads block SIGTERM,
/// so a daemon started that way would ignore `stop()` until the SIGKILL deadline.
///
/// With `ownProcessGroup` the daemon leads a new process group and `stop()` signals the
/// whole group, reaching the children it forks (winbindd's domain children) as well.
/// Output goes to `outputPath` (a file, never a pipe nobody reads), else `/dev/null`.
///
/// Only the fixture that started it calls `hasExited` and `stop()`.
public final class TestDaemon: @unchecked Sendable {  // `reaped` is touched only by the owning fixture's thread
    public let pid: pid_t
    private let ownsGroup: Bool
    /// The wait status, once `stop()` has reaped the daemon.
    private var reaped: Int32?

    public init(_ path: String, _ arguments: [String], environment: [String: String],
                outputPath: String? = nil, ownProcessGroup: Bool = false) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let output = outputPath ?? "/dev/null"
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw TestKDCError("posix_spawn \(path): errno \(result)") }
        self.pid = pid
        self.ownsGroup = ownProcessGroup
    }

    deinit { stop() }

    /// Whether the daemon has exited. It stays unreaped until `stop()`, so its pid (and
    /// process group id) cannot be handed to another process while the group is signalled.
    public var hasExited: Bool {
        if reaped != nil { return true }
        // With WNOHANG and nothing to report, Linux sets si_signo (and si_pid) to 0.
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo == SIGCHLD
    }

    /// SIGTERM (to the group, when it has one), SIGKILL after `grace` seconds; then SIGKILL
    /// for whatever the group still holds, and the daemon is reaped.
    public func stop(grace: Double = 5) {
        guard reaped == nil else { return }
        let target = ownsGroup ? -pid : pid
        kill(target, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while !hasExited {
            if Date() >= deadline {
                kill(target, SIGKILL)
                break
            }
            usleep(5_000)
        }
        if ownsGroup { kill(target, SIGKILL) }
        var waited: Int32 = 0
        _ = waitpid(pid, &waited, 0)
        reaped = waited
    }
}
