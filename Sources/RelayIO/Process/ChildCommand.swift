/// How to start a child program: an absolute path and its arguments, run without a shell
/// (a config value can never become shell syntax).
public struct ChildCommand: Sendable, Equatable {
    /// Where the child's own diagnostics go.
    public enum StandardError: Sendable, Equatable {
        /// The daemon's stderr, so journald keeps them beside ours.
        case inherit
        /// `/dev/null`, for programs that are chatty at every request.
        case discard
    }

    /// Absolute path of the program (posix_spawn does no PATH search here).
    public var executable: String
    /// Arguments after argv[0].
    public var arguments: [String]
    /// Variables set (or replaced) on top of the daemon's environment, e.g. `KRB5_KTNAME`.
    public var environment: [String: String]
    /// Where the child's stderr goes.
    public var standardError: StandardError
    /// The word logs use for this program: its file name.
    public var name: String { String(executable.split(separator: "/").last ?? Substring(executable)) }

    /// A command; `executable` must be an absolute path.
    public init(executable: String, arguments: [String] = [], environment: [String: String] = [:],
                standardError: StandardError = .inherit) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.standardError = standardError
    }
}
