/// A normalised request host: what every policy decision matches against.
public enum Host: Hashable, Sendable, CustomStringConvertible {
    /// A validated, lowercased DNS name without trailing dot.
    case name(String)
    case ipv4(IPv4Address)
    case ipv6(IPv6Address)

    /// The address, when the host is an IP literal (then it skips resolution).
    public var address: IPAddress? {
        switch self {
        case .name: return nil
        case .ipv4(let a): return .v4(a)
        case .ipv6(let a): return .v6(a)
        }
    }

    /// Authority text: IPv6 in brackets so `description + ":" + port` stays unambiguous.
    public var description: String {
        switch self {
        case .name(let name): return name
        case .ipv4(let a): return a.description
        case .ipv6(let a): return "[\(a)]"
        }
    }
}
