import Glibc
import RelayCore
import RelayIO
import RelayServer

/// `dynrelay users add|passwd|del|list`: manage the built-in user store. A running daemon
/// notices the change by itself within about a second; no reload is needed.
enum UsersCommand {
    /// What one invocation asked for.
    struct Invocation {
        enum Action: String { case add, passwd, del, list }
        var action: Action
        var name: String?
        var passwordFromStdin = false
        var configPath: String?
    }

    static func run(_ arguments: [String]) throws(UsageError) -> Never {
        let invocation = try parse(arguments)
        let config = ConfigLoading.loadOrExit(invocation.configPath ?? DynrelayCommand.defaultConfigPath)
        let settings = UserStoreSettings(config: config)
        do throws(UserStoreError) {
            try perform(invocation, settings: settings)
        } catch {
            fail(error.message)
        }
        exit(DynrelayCommand.ExitCode.ok.rawValue)
    }

    /// `ACTION [NAME] [--password-stdin] [--config FILE]`, options anywhere, `--` ending them.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        guard let first = arguments.first, let action = Invocation.Action(rawValue: first) else {
            throw UsageError(message: "users needs one of add, passwd, del, list")
        }
        var invocation = Invocation(action: action)
        var positional: [String] = []
        var index = 1
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positional.append(argument)
                continue
            }
            switch argument {
            case "--":
                optionsEnded = true
            case "--password-stdin" where action == .add || action == .passwd:
                guard !invocation.passwordFromStdin else { throw UsageError(message: "--password-stdin given twice") }
                invocation.passwordFromStdin = true
            case "--config":
                guard index < arguments.count else { throw UsageError(message: "--config needs a value") }
                guard invocation.configPath == nil else { throw UsageError(message: "--config given twice") }
                invocation.configPath = arguments[index]
                index += 1
            default:
                throw UsageError(message: "unknown option '\(argument)' for users \(action.rawValue)")
            }
        }
        switch (action, positional.count) {
        case (.list, 0):
            break
        case (.list, _):
            throw UsageError(message: "users list takes no user name")
        case (_, 1):
            invocation.name = positional[0]
        default:
            throw UsageError(message: "users \(action.rawValue) needs exactly one user name")
        }
        return invocation
    }

    private static func perform(_ invocation: Invocation, settings: UserStoreSettings) throws(UserStoreError) {
        let path = settings.storePath
        switch invocation.action {
        case .list:
            // Listing must not create a store (or a key) that was never there.
            guard access(path, F_OK) == 0 else { return }
            let store = try UserStore(path: path, key: try settings.keySource.load())
            for user in try store.list() {
                print([user.name, user.digestRealm ?? "-", user.created ?? "-", user.updated ?? "-"].joined(separator: "\t"))
            }
        case .del:
            let name = invocation.name!
            guard access(path, F_OK) == 0 else {
                throw UserStoreError(code: UserStoreError.Code.noSuchUser, message: "no user '\(name)'")
            }
            try requireOwnStateDirectory(settings.stateDir)
            let store = try UserStore(path: path, key: try settings.keySource.load())
            try store.delete(name: name)
            print("users: deleted \(name)")
        case .add, .passwd:
            let name = invocation.name!
            // Refuse a bad name before asking for a password that would be thrown away.
            try UserCredentialRules.validate(name: name)
            if invocation.action == .passwd, access(path, F_OK) != 0 {
                throw UserStoreError(code: UserStoreError.Code.noSuchUser, message: "no user '\(name)'")
            }
            try requireOwnStateDirectory(settings.stateDir)
            let password = try readPassword(for: name, fromStdin: invocation.passwordFromStdin)
            try prepareStateDirectory(settings.stateDir)
            let store = try UserStore(path: path, key: try settings.keySource.loadOrCreate())
            if invocation.action == .add {
                try store.add(name: name, password: password, digestRealm: settings.digestRealm)
                print("users: added \(name)")
            } else {
                try store.setPassword(name: name, password: password, digestRealm: settings.digestRealm)
                print("users: password of \(name) changed")
            }
        }
    }

    // MARK: - Password input

    private static func readPassword(for name: String, fromStdin: Bool) throws(UserStoreError) -> String {
        if fromStdin {
            return try UserCredentialRules.password(fromBytes: readLine(fd: STDIN_FILENO))
        }
        guard isatty(STDIN_FILENO) == 1 else {
            DynrelayCommand.fail("dynrelay: users: standard input is not a terminal; pipe the password in with --password-stdin",
                                 .usage)
        }
        let first = try UserCredentialRules.password(fromBytes: readWithoutEcho(prompt: "Password for \(name): "))
        let second = readWithoutEcho(prompt: "Retype password: ")
        guard Array(first.utf8) == second else { fail("the passwords do not match; nothing changed") }
        return first
    }

    /// One line from `fd`, without its `\n` or `\r\n`. Reads byte by byte so nothing past
    /// the line is consumed; stops early past the longest password allowed (the rules then
    /// refuse the length).
    static func readLine(fd: Int32) -> [UInt8] {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= UserCredentialRules.maxPasswordBytes + 1 {
            let n = retryingInterruptions { read(fd, &byte, 1) }
            if n <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    /// Prompts on stderr and reads a line from the terminal with echo off, restoring the
    /// terminal's settings afterwards.
    private static func readWithoutEcho(prompt: String) -> [UInt8] {
        RelayLog.writeToStandardError(prompt)
        var saved = termios()
        let haveSettings = tcgetattr(STDIN_FILENO, &saved) == 0
        if haveSettings {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        let line = readLine(fd: STDIN_FILENO)
        if haveSettings { _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
        return line
    }

    /// Refuses to write into a state directory another user owns. The daemon runs as the
    /// service's user (with the shipped unit a dynamic one), so a store or key file this
    /// process creates there as root is one the daemon cannot read; systemd hands files
    /// back to the service's user only when the directory itself changes hands. A missing
    /// directory is fine: systemd gives the one this process makes to the service at start.
    private static func requireOwnStateDirectory(_ path: String) throws(UserStoreError) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let me = geteuid()
        guard info.st_uid != me else { return }
        throw UserStoreError(code: UserStoreError.Code.open,
                             message: "\(path) belongs to uid \(info.st_uid), not to uid \(me) running this, so the daemon "
                                 + "could not read what this would write: run dynrelay users as the service's user, e.g. "
                                 + "systemd-run --pty --wait --collect -p DynamicUser=yes -p User=dynrelay "
                                 + "-p StateDirectory=dynrelay dynrelay users ... (docs/operations.md)")
    }

    private static func prepareStateDirectory(_ path: String) throws(UserStoreError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw UserStoreError(code: UserStoreError.Code.open, message: "mkdir \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func fail(_ message: String) -> Never {
        DynrelayCommand.fail("dynrelay: users: \(message)", .failure)
    }
}
