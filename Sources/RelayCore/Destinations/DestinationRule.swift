/// One `server` (allow) or `deny` line of the configuration.
public struct DestinationRule: Sendable, Equatable {
    /// Whether the rule registers a destination or forbids one.
    public enum Kind: String, Sendable, Equatable {
        case server
        case deny
    }

    /// Allow or deny.
    public var kind: Kind
    /// Which hosts the rule covers.
    public var host: HostPattern
    /// Which ports the rule covers.
    public var ports: PortRange
    /// Where the rule was written; `location.rule` names it in decisions and audit rows.
    public var location: SourceLocation

    /// Creates a rule.
    public init(kind: Kind, host: HostPattern, ports: PortRange, location: SourceLocation) {
        self.kind = kind
        self.host = host
        self.ports = ports
        self.location = location
    }

    /// The `file:line` that names this rule.
    public var rule: String { location.rule }
}
