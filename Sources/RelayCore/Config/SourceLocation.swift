/// Where something was written in the configuration.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The file path as the parser was given it (main file) or the include resolver
    /// returned it.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column (in Unicode scalars) of the token.
    public var column: Int

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line`: how decisions and audit rows name the rule written here.
    public var rule: String { "\(file):\(line)" }

    /// `file:line:col`.
    public var description: String { "\(file):\(line):\(column)" }
}
