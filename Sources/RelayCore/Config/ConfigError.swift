/// A configuration problem, reported as `file:line:col: message` like a compiler would,
/// so editors and ops tooling can jump to it.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the offending token is.
    public var location: SourceLocation
    /// What is wrong, for a human.
    public var message: String

    /// Creates an error at `location`.
    public init(location: SourceLocation, message: String) {
        self.location = location
        self.message = message
    }

    /// `file:line:col: message`.
    public var description: String { "\(location): \(message)" }
}
