import CRelayShims
import Glibc

/// One started child: its pid, our end of its stdin/stdout socket (non-blocking,
/// close-on-exec), and a pidfd that becomes readable when it exits (-1 on kernels without
/// pidfd_open; then EOF on the socket is the only death signal).
struct SpawnedChild {
    let pid: pid_t
    let socket: Int32
    let pidfd: Int32

    /// Starts `command` with posix_spawn: no shell, stdin and stdout on one end of a
    /// socketpair (as Squid connects its helpers), stderr inherited or `/dev/null`, every
    /// signal back to its default and none blocked (the daemon ignores SIGPIPE; exec would
    /// pass that on, and a child that cannot die of SIGPIPE may spin on a closed pipe).
    static func spawn(_ command: ChildCommand) throws(IOError) -> SpawnedChild {
        var pair: [Int32] = [-1, -1]
        guard crelay_socketpair_cloexec(&pair) == 0 else { throw IOError("socketpair", errno: errno) }
        let (ours, theirs) = (pair[0], pair[1])
        // The child's end goes away whatever happens: after a spawn the child holds its copies.
        defer { close(theirs) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies only; `theirs` itself and `ours` stay out.
        posix_spawn_file_actions_adddup2(&actions, theirs, 0)
        posix_spawn_file_actions_adddup2(&actions, theirs, 1)
        if command.standardError == .discard {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = [command.executable] + command.arguments
        let envp = Self.environment(adding: command.environment)
        var pid: pid_t = 0
        let status = withCStrings(argv) { argvPointers in
            withCStrings(envp) { envPointers in
                posix_spawn(&pid, command.executable, &actions, &attributes, argvPointers, envPointers)
            }
        }
        guard status == 0 else {
            close(ours)
            throw IOError("posix_spawn \(command.executable)", errno: status)
        }
        let flags = fcntl(ours, F_GETFL)
        _ = fcntl(ours, F_SETFL, flags | O_NONBLOCK)
        let pidfd = crelay_pidfd_open(pid)
        if pidfd >= 0 { _ = fcntl(pidfd, F_SETFD, FD_CLOEXEC) }
        return SpawnedChild(pid: pid, socket: ours, pidfd: pidfd)
    }

    /// The daemon's environment with `overrides` set on top, as `KEY=value` strings.
    private static func environment(adding overrides: [String: String]) -> [String] {
        var entries: [String] = []
        var cursor: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        while let current = cursor, let entry = current.pointee {
            let text = String(cString: entry)
            let key = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if overrides[key] == nil { entries.append(text) }
            cursor = current.successor()
        }
        for (key, value) in overrides.sorted(by: { $0.key < $1.key }) {
            entries.append("\(key)=\(value)")
        }
        return entries
    }
}

/// Calls `body` with a NULL-terminated C array of `strings`, valid only during the call.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies + [nil])
}
