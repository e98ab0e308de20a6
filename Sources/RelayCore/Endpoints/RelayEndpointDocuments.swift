/// The JSON the relay's endpoints answer with. Keys come in a fixed order (the order of
/// these functions' literals), so a client or a test can compare the bytes.
public enum RelayEndpointDocuments {
    /// `{"status":"ok"|"draining","version":…,"instance":…}`.
    public static func status(_ facts: RelayFacts, draining: Bool) -> JSONValue {
        .object([
            ("status", .string(draining ? "draining" : "ok")),
            ("version", .string(facts.version)),
            ("instance", .string(facts.instance)),
        ])
    }

    /// The principal (null without proxy authentication) and the servers it may reach.
    /// Rules are not scoped to principals, so that is every `server` rule, in config order.
    /// `deny` rules are left out: which hosts the enterprise fences off inside its allowed
    /// ranges is its own business, and a client gains nothing from the list but a map.
    public static func config(principal: AuthPrincipal?, registry: Registry) -> JSONValue {
        .object([
            ("principal", principal.map { .string($0.name) } ?? .null),
            ("scheme", principal.map { .string($0.scheme) } ?? .null),
            ("servers", .array(registry.rules.filter { $0.kind == .server }.map(server))),
        ])
    }

    /// One `server` rule as written (normalised), with its TLS policy under the config's
    /// own words: `tls-versions=`, `sni=`, `tunnel-tls=`, `tls` (the relay speaks TLS to it
    /// even for `http://`) and `verify=`. A `ca=` file is the relay's, not the client's.
    static func server(_ rule: DestinationRule) -> JSONValue {
        .object([
            ("host", .string(rule.host.description)),
            ("ports", .string(rule.ports.description)),
            ("rule", .string(rule.rule)),
            ("tls-versions", .array(rule.tunnelTLS.versions.versions.map { .string($0.number) })),
            ("sni", .string(rule.tunnelTLS.sni.rawValue)),
            ("tunnel-tls", .string(rule.tunnelTLS.requirement.rawValue)),
            ("tls", .bool(rule.upstreamTLS.always)),
            ("verify", .bool(rule.upstreamTLS.verify)),
        ])
    }
}
