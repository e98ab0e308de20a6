/// Something a configuration allows but ops should see every time it is loaded (a
/// `server … verify=off`): `check-config` prints it, start-up and reload log it.
public struct ConfigWarning: Sendable, Equatable, CustomStringConvertible {
    /// The token that asked for it.
    public var location: SourceLocation
    /// What is risky, for a human.
    public var message: String

    /// Creates a warning at `location`.
    public init(location: SourceLocation, message: String) {
        self.location = location
        self.message = message
    }

    /// `file:line:col: warning: message`, as compilers print theirs.
    public var description: String { "\(location): warning: \(message)" }
}
