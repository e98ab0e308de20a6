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
    /// What a tunnel's end-to-end TLS may do (`sni=`, `tunnel-tls=`). Its `versions` (the
    /// rule's `tls-versions=`, else the global set) also bound the relay's own TLS to the server.
    public var tunnelTLS: TunnelTLSPolicy
    /// How the relay speaks TLS to the server itself (`tls`, `ca=`, `verify=`).
    public var upstreamTLS: UpstreamTLSPolicy

    /// Creates a rule; a `deny` rule keeps the default TLS policies.
    public init(kind: Kind, host: HostPattern, ports: PortRange, location: SourceLocation,
                tunnelTLS: TunnelTLSPolicy = TunnelTLSPolicy(), upstreamTLS: UpstreamTLSPolicy = UpstreamTLSPolicy()) {
        self.kind = kind
        self.host = host
        self.ports = ports
        self.location = location
        self.tunnelTLS = tunnelTLS
        self.upstreamTLS = upstreamTLS
    }

    /// The `file:line` that names this rule.
    public var rule: String { location.rule }
}
