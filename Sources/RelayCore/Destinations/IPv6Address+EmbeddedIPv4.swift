/// IPv6 addresses that carry an IPv4 address: a translator, a tunnel or the kernel turns a
/// connection to them into one to that IPv4 host, so a rule about the IPv4 host must see
/// through them, and a literal spelled this way has two readings.
extension IPv6Address {
    /// An IPv4 address carried inside an IPv6 address, and the convention that carries it.
    public struct EmbeddedIPv4: Hashable, Sendable {
        /// The conventions that put an IPv4 address inside an IPv6 one.
        public enum Convention: String, Hashable, Sendable {
            /// `::ffff:a.b.c.d` (RFC 4291 2.5.5.2): an IPv6 socket reaching an IPv4 host.
            case mapped
            /// `::a.b.c.d` (RFC 4291 2.5.5.1, deprecated), all of `::/96` but `::` and `::1`.
            case compatible
            /// `::ffff:0:a.b.c.d` (RFC 2765, SIIT).
            case translated
            /// `64:ff9b::a.b.c.d` (RFC 6052 well-known prefix: what DNS64 answers).
            case nat64
            /// Inside `64:ff9b:1::/48` (RFC 8215), read from the last 32 bits: the /96 layout
            /// deployments use. RFC 6052 lets an operator pick a shorter prefix that puts the
            /// IPv4 address elsewhere, and nothing on the wire says which; reading every
            /// layout would refuse ordinary hosts whose shifted bytes look guarded. With a
            /// shorter prefix the last 32 bits are zero, so such addresses read `0.0.0.0` and
            /// are refused as guarded: that deployment fails closed, visibly.
            case nat64LocalUse
            /// `2002:AABB:CCDD::/48` (RFC 3056, 6to4).
            case sixToFour
            /// `2001:0:AABB:CCDD::` (RFC 4380, Teredo): the Teredo server.
            case teredoServer
            /// The Teredo client's public address, stored inverted in the last 32 bits.
            case teredoClient
            /// `…:0:5efe:a.b.c.d` (RFC 5214, ISATAP), under any prefix.
            case isatap
        }

        /// How the address is carried.
        public var convention: Convention
        /// The IPv4 address carried.
        public var address: IPv4Address

        /// Pairs an IPv4 address with the convention that carries it.
        public init(_ convention: Convention, _ address: IPv4Address) {
            self.convention = convention
            self.address = address
        }
    }

    /// Whether this address carries an IPv4 address by any convention: a literal like that
    /// names two hosts.
    public var embedsIPv4: Bool { !embeddedIPv4.isEmpty }

    /// Every IPv4 address this one carries, by every convention that applies (an ISATAP
    /// interface identifier under a 6to4 prefix carries two).
    public var embeddedIPv4: [EmbeddedIPv4] {
        var found: [EmbeddedIPv4] = []
        let low32 = IPv4Address(UInt32(truncatingIfNeeded: low))
        if high == 0 {
            switch low >> 32 {
            case 0xffff: found.append(EmbeddedIPv4(.mapped, low32))
            case 0xffff_0000: found.append(EmbeddedIPv4(.translated, low32))
            case 0 where low > 1: found.append(EmbeddedIPv4(.compatible, low32))
            default: break
            }
        }
        if high == Self.nat64High && low >> 32 == 0 {
            found.append(EmbeddedIPv4(.nat64, low32))
        }
        if high >> 16 == Self.nat64LocalUseHigh48 {
            found.append(EmbeddedIPv4(.nat64LocalUse, low32))
        }
        if high >> 48 == 0x2002 {
            found.append(EmbeddedIPv4(.sixToFour, IPv4Address(UInt32(truncatingIfNeeded: high >> 16))))
        }
        if high >> 32 == 0x2001_0000 {
            found.append(EmbeddedIPv4(.teredoServer, IPv4Address(UInt32(truncatingIfNeeded: high))))
            found.append(EmbeddedIPv4(.teredoClient, IPv4Address(~UInt32(truncatingIfNeeded: low))))
        }
        if isISATAP {
            found.append(EmbeddedIPv4(.isatap, low32))
        }
        return found
    }

    /// `64:ff9b::/96`, high half.
    private static let nat64High: UInt64 = 0x0064_ff9b_0000_0000
    /// `64:ff9b:1::/48`, its 48 bits.
    private static let nat64LocalUseHigh48: UInt64 = 0x0064_ff9b_0001

    /// An interface identifier starting `0000:5efe` or `0200:5efe` (RFC 5214 6.1: the
    /// universal/local bit says whether the IPv4 address is global).
    private var isISATAP: Bool {
        low >> 32 & 0xfdff_ffff == 0x0000_5efe
    }
}

extension IPAddress {
    /// The address followed by every IPv4 address it carries: what deny rules, the guard
    /// and the relay's own endpoints must all be checked against, so `::ffff:127.0.0.1`,
    /// `64:ff9b::7f00:1` or `2002:7f00:1::` cannot dodge a rule about `127.0.0.1`.
    public var policyForms: [IPAddress] {
        guard case .v6(let address) = self else { return [self] }
        var forms = [self]
        for embedded in address.embeddedIPv4 where !forms.contains(.v4(embedded.address)) {
            forms.append(.v4(embedded.address))
        }
        return forms
    }
}
