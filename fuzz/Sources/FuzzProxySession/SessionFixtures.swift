import RelayCore
import Synchronization

/// The world a fuzzed session lives in: its rules, what names resolve to, who may
/// authenticate, and an oracle, written apart from the registry, for which addresses the
/// relay must never connect to.
enum SessionFixtures {
    static let rules = """
        listen 127.0.0.1:3128
        listen 10.20.0.9:3128
        auth none
        server app.corp.example:443
        server .intranet.example:80-8089
        server 10.20.0.0/16:*
        server [2001:db8::/32]:443
        deny 10.20.99.0/24
        deny .hr.intranet.example
        """
    /// What a reload may swap in: fewer servers, the same denies (so the address oracle
    /// holds whichever registry decided).
    static let narrowerRules = """
        listen 127.0.0.1:3128
        server app.corp.example:443
        deny 10.20.99.0/24
        """

    static let config = try! ConfigParser.parse(text: rules, file: "fuzz.conf")
    static let registry = config.registry
    static let narrowerRegistry = try! ConfigParser.parse(text: narrowerRules, file: "reload.conf").registry

    /// The relay's own host: its two listeners, and 10.20.0.9 as an interface address.
    static let localHost: LocalHost = {
        let host = LocalHost()
        host.update(listeners: config.listeners)
        host.update(interfaceAddresses: [v4(10, 20, 0, 9)])
        return host
    }()

    /// Resolver answers are drawn from here: ordinary addresses, and ones a name must never
    /// lead to (loopback, metadata, unspecified, a denied block, IPv4-mapped loopback, the
    /// relay's own address).
    static let answerPool: [IPAddress] = [
        v4(10, 20, 1, 1), v4(10, 20, 2, 2), .v6(IPv6Address(high: 0x2001_0db8_0000_0000, low: 1)), v4(192, 0, 2, 7),
        v4(127, 0, 0, 1), v4(169, 254, 169, 254), .v6(IPv6Address(high: 0, low: 1)), v4(10, 20, 99, 9),
        v4(0, 0, 0, 0), .v6(IPv6Address(mapping: IPv4Address(127, 0, 0, 1))), v4(10, 20, 0, 9),
    ]

    static let principals = [AuthPrincipal(name: "alice", scheme: "Basic"), AuthPrincipal(name: "Bob", scheme: "NTLM"),
                             AuthPrincipal(name: "carol@EXAMPLE.TEST", scheme: "Negotiate")]
    static let scopes: [AuthScope] = [.request, .sameCredentials, .connection]
    static let authRefusals: [ReasonCode] = [.authRequired, .authContinue, .badPassword, .unknownUser, .staleNonce,
                                             .badCredentials, .lockedOut, .authUnavailable, .gssError]
    static let connectFailures: [ReasonCode] = [.upstreamRefused, .upstreamUnreachable, .upstreamTimeout]
    static let connectionLosses: [ReasonCode] = [.clientReset, .idleTimeout, .stalled, .shutdown]

    /// Whether the relay may connect to `address`: not loopback, unspecified, link-local or
    /// multicast, not in the denied block, not the relay's own address (when the session
    /// knows it), seen through every IPv4 an IPv6 address carries in its mapped,
    /// compatible, NAT64 or 6to4 form.
    static func mayConnect(to address: IPAddress, knowingLocalHost: Bool) -> Bool {
        var carried: [UInt32] = []
        switch address {
        case .v4(let v4):
            carried = [v4.value]
        case .v6(let v6):
            if v6.high == 0 && v6.low <= 1 { return false }
            if v6.high >> 54 == 0x3FA || v6.high >> 56 == 0xFF { return false }
            if v6.high == 0 && (v6.low >> 32 == 0xFFFF || v6.low >> 32 == 0) { carried.append(UInt32(truncatingIfNeeded: v6.low)) }
            if v6.high == 0x0064_FF9B_0000_0000 && v6.low >> 32 == 0 { carried.append(UInt32(truncatingIfNeeded: v6.low)) }
            if v6.high >> 48 == 0x2002 { carried.append(UInt32(truncatingIfNeeded: v6.high >> 16)) }
        }
        return carried.allSatisfy { value in
            let first = value >> 24
            return first != 127 && first != 0 && first < 224 && value >> 16 != 0xA9FE
                && value >> 8 != 0x0A_1463 && !(knowingLocalHost && value == 0x0A14_0009)
        }
    }

    private static func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> IPAddress {
        .v4(IPv4Address(a, b, c, d))
    }
}

/// The user store's version, which a reload may move on.
final class CredentialsVersion: Sendable {
    private let value = Mutex<UInt64>(1)

    var current: UInt64 { value.withLock { $0 } }

    func advance() {
        value.withLock { $0 += 1 }
    }
}
