/// An address block: a base address and a prefix length.
public struct CIDR: Hashable, Sendable, CustomStringConvertible {
    /// The first address of the block (host bits always clear).
    public let base: IPAddress
    /// Prefix length: 0...32 for IPv4, 0...128 for IPv6.
    public let prefix: Int

    /// The block of `prefix` bits around `base`; host bits of `base` are cleared.
    /// Nil when the prefix is out of range for the family.
    public init?(base: IPAddress, prefix: Int) {
        switch base {
        case .v4(let a):
            guard (0...32).contains(prefix) else { return nil }
            self.base = .v4(IPv4Address(a.value & CIDR.mask32(prefix)))
        case .v6(let a):
            guard (0...128).contains(prefix) else { return nil }
            let (high, low) = CIDR.mask128(prefix)
            self.base = .v6(IPv6Address(high: a.high & high, low: a.low & low))
        }
        self.prefix = prefix
    }

    /// A single address: /32 or /128.
    public init(address: IPAddress) {
        base = address
        switch address {
        case .v4: prefix = 32
        case .v6: prefix = 128
        }
    }

    /// True when `address` is of the same family and inside the block.
    ///
    /// Families never mix here: `10.0.0.0/8` does not contain `::ffff:10.0.0.1`. Callers
    /// that must see through IPv4-mapped addresses (the registry) check both forms.
    public func contains(_ address: IPAddress) -> Bool {
        switch (base, address) {
        case (.v4(let b), .v4(let a)):
            return a.value & CIDR.mask32(prefix) == b.value
        case (.v6(let b), .v6(let a)):
            let (high, low) = CIDR.mask128(prefix)
            return a.high & high == b.high && a.low & low == b.low
        default:
            return false
        }
    }

    /// True when this is one address (/32 or /128).
    public var isSingleAddress: Bool {
        switch base {
        case .v4: return prefix == 32
        case .v6: return prefix == 128
        }
    }

    /// `10.0.0.0/8`, `2001:db8::/32`; a single address prints without prefix.
    public var description: String {
        isSingleAddress ? base.description : "\(base)/\(prefix)"
    }

    private static func mask32(_ prefix: Int) -> UInt32 {
        prefix == 0 ? 0 : UInt32.max << UInt32(32 - prefix)
    }

    private static func mask128(_ prefix: Int) -> (UInt64, UInt64) {
        if prefix <= 64 {
            return (prefix == 0 ? 0 : UInt64.max << UInt64(64 - prefix), 0)
        }
        return (.max, UInt64.max << UInt64(128 - prefix))
    }
}
