/// The host side of a `server` or `deny` rule.
public enum HostPattern: Hashable, Sendable, CustomStringConvertible {
    /// Exactly this normalised name.
    case exact(String)
    /// This normalised name and every name below it, stored without the leading dot:
    /// config `.corp.example` is `.domain("corp.example")` and matches `corp.example` and
    /// `a.b.corp.example`, never `evilcorp.example`.
    case domain(String)
    /// Addresses in a block; a single address is a /32 or /128.
    case address(CIDR)
    /// Any host.
    case any

    /// True when the normalised `host` falls under this pattern. Families never mix and
    /// names never match addresses: a name is only checked by address after resolution.
    public func matches(_ host: Host) -> Bool {
        switch (self, host) {
        case (.any, _):
            return true
        case (.exact(let pattern), .name(let name)):
            return name == pattern
        case (.domain(let domain), .name(let name)):
            return name == domain || name.hasSuffix("." + domain)
        case (.address(let cidr), _):
            guard let address = host.address else { return false }
            return cidr.contains(address)
        default:
            return false
        }
    }

    /// The block, when this pattern names addresses.
    public var cidr: CIDR? {
        if case .address(let cidr) = self { return cidr }
        return nil
    }

    /// Config syntax.
    public var description: String {
        switch self {
        case .exact(let name): return name
        case .domain(let domain): return "." + domain
        case .address(let cidr):
            if case .v6 = cidr.base { return "[\(cidr)]" }
            return cidr.description
        case .any: return "*"
        }
    }
}
