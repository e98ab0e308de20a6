/// An IPv4 or IPv6 address: what a resolver returns and what a CIDR rule matches.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(IPv4Address)
    case v6(IPv6Address)

    /// Builds an address from 4 or 16 network-order bytes (as in `sockaddr_in{,6}`).
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: self = .v4(IPv4Address(bytes[0], bytes[1], bytes[2], bytes[3]))
        case 16:
            guard let v6 = IPv6Address(bytes: bytes) else { return nil }
            self = .v6(v6)
        default: return nil
        }
    }

    /// The address's network-order bytes (4 or 16).
    public var bytes: [UInt8] {
        switch self {
        case .v4(let a): return a.bytes
        case .v6(let a): return a.bytes
        }
    }

    /// Canonical text, without brackets.
    public var description: String {
        switch self {
        case .v4(let a): return a.description
        case .v6(let a): return a.description
        }
    }
}

extension IPAddress {
    /// 127.0.0.0/8 or ::1: reachable from this machine only.
    public var isLoopback: Bool {
        switch self {
        case .v4(let address): return address.value >> 24 == 127
        case .v6(let address): return address == IPv6Address(text: "::1")
        }
    }
}
