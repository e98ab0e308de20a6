/// Addresses no name may resolve to unless a rule names them by address.
///
/// This is what makes DNS rebinding useless: `evil.example` resolving to `127.0.0.1` or
/// to the cloud metadata service is refused even when `evil.example` were registered.
public enum AddressGuard {
    /// The guarded blocks. AWS's IPv6 metadata endpoint is included next to
    /// 169.254.169.254 because it serves the same credentials.
    public static let guardedBlocks: [CIDR] = {
        func v4(_ text: String, _ prefix: Int) -> CIDR? {
            IPv4Address(strict: text).flatMap { CIDR(base: .v4($0), prefix: prefix) }
        }
        func v6(_ text: String, _ prefix: Int) -> CIDR? {
            IPv6Address(text: text).flatMap { CIDR(base: .v6($0), prefix: prefix) }
        }
        let blocks = [
            v4("127.0.0.0", 8),        // loopback
            v4("0.0.0.0", 8),          // "this network": 0.0.0.0 connects to loopback on Linux
            v4("169.254.0.0", 16),     // link-local, includes metadata 169.254.169.254
            v4("224.0.0.0", 4),        // multicast
            v4("255.255.255.255", 32), // limited broadcast
            v6("::1", 128),            // loopback
            v6("::", 128),             // unspecified
            v6("fe80::", 10),          // link-local
            v6("ff00::", 8),           // multicast
            v6("fd00:ec2::254", 128),  // AWS metadata over IPv6
        ]
        return blocks.compactMap { $0 }
    }()

    /// True when `address`, or an IPv4 address it carries (`IPAddress.policyForms`), is guarded.
    public static func isGuarded(_ address: IPAddress) -> Bool {
        address.policyForms.contains { form in guardedBlocks.contains { $0.contains(form) } }
    }

    /// True when the whole block lies inside one guarded block, seen through IPv4 mapping
    /// (and, for a single address, through every way an IPv6 address carries an IPv4 one):
    /// `127.0.0.1`, `[::ffff:127.0.0.1]`, `[64:ff9b::7f00:1]` and `169.254.169.254/32` do,
    /// `0.0.0.0/0` does not.
    public static func liesInGuardedSpace(_ cidr: CIDR) -> Bool {
        var candidates = [cidr]
        if case .v6(let base) = cidr.base {
            if cidr.prefix >= 96, let v4 = base.mappedIPv4, let unmapped = CIDR(base: .v4(v4), prefix: cidr.prefix - 96) {
                candidates.append(unmapped)
            }
            if cidr.isSingleAddress {
                candidates += base.embeddedIPv4.map { CIDR(address: .v4($0.address)) }
            }
        }
        return candidates.contains { candidate in
            guardedBlocks.contains { $0.prefix <= candidate.prefix && $0.contains(candidate.base) }
        }
    }
}
