/// The registered destinations: default deny, `deny` wins over any `server`.
///
/// Immutable once built so a reload swaps a whole registry atomically and decisions in
/// flight keep a consistent view.
public struct Registry: Sendable {
    /// All rules in config order.
    public let rules: [DestinationRule]
    private let denyRules: [DestinationRule]
    private let serverRules: [DestinationRule]
    private let rulesByName: [String: DestinationRule]

    /// Builds a registry; order among servers matters only for which rule is named.
    public init(rules: [DestinationRule]) {
        self.rules = rules
        denyRules = rules.filter { $0.kind == .deny }
        serverRules = rules.filter { $0.kind == .server }
        // One directive per line, so a `file:line` names one rule.
        rulesByName = Dictionary(rules.map { ($0.rule, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The rule a decision names (`Decision.allow(rule:)`), for its TLS policies; nil for a
    /// name no rule of this registry has (a decision made before a reload).
    public func rule(named name: String) -> DestinationRule? {
        rulesByName[name]
    }

    /// Before resolution (contract section Decisions). An IPv6 literal that carries an IPv4
    /// address (IPv4-mapped, -compatible, -translated, NAT64, 6to4, Teredo, ISATAP: see
    /// `IPv6Address.embedsIPv4`) is `.ambiguousHost` unless a server rule registers that
    /// exact IPv6 address; deny rules see through it either way.
    public func decide(host: Host, port: UInt16) -> Decision {
        let forms = Registry.forms(of: host)
        if let deny = denyRules.first(where: { rule in
            rule.ports.contains(port) && forms.contains { rule.host.matches($0) }
        }) {
            return .deny(rule: deny.rule, reason: .denied)
        }
        if case .ipv6(let address) = host, address.embedsIPv4 {
            let exact = CIDR(address: .v6(address))
            guard let server = serverRules.first(where: { $0.ports.contains(port) && $0.host.cidr == exact }) else {
                return .deny(rule: nil, reason: .ambiguousHost)
            }
            return .allow(rule: server.rule)
        }
        if let server = serverRules.first(where: { $0.ports.contains(port) && $0.host.matches(host) }) {
            return .allow(rule: server.rule)
        }
        return .deny(rule: nil, reason: .notRegistered)
    }

    /// After resolution, for EVERY resolved address: the relay's own listening endpoints
    /// (`.relayLoop`, which no rule lifts), deny CIDRs, then the built-in guard (loopback,
    /// unspecified, link-local, 169.254.169.254, multicast, and the host's own interface
    /// addresses from `localHost`) unless registered by address, each checked against the
    /// address and every IPv4 address it carries (a DNS64 resolver answers
    /// `64:ff9b::a.b.c.d` for an IPv4-only name). `localHost` is nil where the host is not
    /// known (checking a configuration before it runs).
    ///
    /// A guarded address let through by a server rule naming it by address is reported
    /// with that rule, since it is the reason the address was allowed; otherwise the
    /// decision carries `allowRule` from `decide`.
    public func checkResolved(address: IPAddress, port: UInt16, allowRule: String, localHost: LocalHost?) -> Decision {
        if let localHost, localHost.isRelayEndpoint(address, port: port) {
            return .deny(rule: nil, reason: .relayLoop)
        }
        let forms = address.policyForms
        func coversByAddress(_ rule: DestinationRule) -> Bool {
            guard rule.ports.contains(port), let cidr = rule.host.cidr else { return false }
            return forms.contains { cidr.contains($0) }
        }
        if let deny = denyRules.first(where: coversByAddress) {
            return .deny(rule: deny.rule, reason: .denied)
        }
        let isOwn = localHost?.isOwnAddress(address) == true
        if AddressGuard.isGuarded(address) || isOwn {
            // A wide block (`0.0.0.0/0`, `::/0`) registers ordinary hosts; only a rule
            // that deliberately names guarded space (or exactly one of the host's own
            // addresses) lifts the guard.
            guard let server = serverRules.first(where: { rule in
                guard coversByAddress(rule), let cidr = rule.host.cidr else { return false }
                return AddressGuard.liesInGuardedSpace(cidr) || (isOwn && localHost?.namesOnlyOwnAddress(cidr) == true)
            }) else {
                return .deny(rule: nil, reason: .guardedAddress)
            }
            return .allow(rule: server.rule)
        }
        return .allow(rule: allowRule)
    }

    /// The host plus, for an IPv6 literal carrying IPv4 addresses, the IPv4 hosts it
    /// reaches: deny rules must see through it.
    private static func forms(of host: Host) -> [Host] {
        guard let address = host.address else { return [host] }
        return address.policyForms.map { form in
            switch form {
            case .v4(let v4): return .ipv4(v4)
            case .v6(let v6): return .ipv6(v6)
            }
        }
    }
}
