import Testing
@testable import RelayCore

/// IPv6 addresses that carry an IPv4 address: which convention, which IPv4 address, and
/// what is left alone.
@Suite("IPv4 embedded in IPv6")
struct EmbeddedIPv4Tests {
    typealias Embedded = IPv6Address.EmbeddedIPv4

    static func v6(_ text: String) -> IPv6Address { IPv6Address(text: text)! }
    static func v4(_ text: String) -> IPv4Address { IPv4Address(strict: text)! }

    @Test("each convention yields the IPv4 address it carries", arguments: [
        ("::ffff:127.0.0.1", [Embedded(.mapped, v4("127.0.0.1"))]),
        ("::127.0.0.1", [Embedded(.compatible, v4("127.0.0.1"))]),
        ("::2", [Embedded(.compatible, v4("0.0.0.2"))]),
        ("::ffff:0:169.254.169.254", [Embedded(.translated, v4("169.254.169.254"))]),
        ("64:ff9b::10.1.2.3", [Embedded(.nat64, v4("10.1.2.3"))]),
        ("64:ff9b::7f00:1", [Embedded(.nat64, v4("127.0.0.1"))]),
        // Local-use NAT64 is read at the /96 layout; a shorter operator prefix reads 0.0.0.0.
        ("64:ff9b:1:abcd:0:0:10.1.2.3", [Embedded(.nat64LocalUse, v4("10.1.2.3"))]),
        ("64:ff9b:1:7f00:0:100::", [Embedded(.nat64LocalUse, v4("0.0.0.0"))]),
        ("2002:7f00:1::", [Embedded(.sixToFour, v4("127.0.0.1"))]),
        ("2002:a9fe:a9fe:1::5", [Embedded(.sixToFour, v4("169.254.169.254"))]),
        ("2001:0:a01:203::80ff:fefe", [Embedded(.teredoServer, v4("10.1.2.3")), Embedded(.teredoClient, v4("127.0.1.1"))]),
        ("2001:db8::5efe:127.0.0.1", [Embedded(.isatap, v4("127.0.0.1"))]),
        ("2001:db8::200:5efe:10.0.0.1", [Embedded(.isatap, v4("10.0.0.1"))]),
        ("2002:a00:1::5efe:127.0.0.1", [Embedded(.sixToFour, v4("10.0.0.1")), Embedded(.isatap, v4("127.0.0.1"))]),
    ])
    func readings(text: String, expected: [Embedded]) {
        let address = Self.v6(text)
        #expect(address.embeddedIPv4 == expected, "\(text)")
        #expect(address.embedsIPv4, "\(text)")
        #expect(IPAddress.v6(address).policyForms == [.v6(address)] + expected.map { .v4($0.address) }.uniqued(), "\(text)")
    }

    @Test("ordinary IPv6 carries nothing", arguments: [
        "::", "::1", "2001:db8::1", "fe80::1", "64:ff9b::1:0:0:1", "64:ff9b:2::1", "2003::1", "2001:1::1",
        "2001:db8::100:5efe:a00:1", "2001:db8::5eff:a00:1", "fd00:ec2::254",
    ])
    func nothingEmbedded(text: String) {
        let address = Self.v6(text)
        #expect(address.embeddedIPv4.isEmpty, "\(text)")
        #expect(!address.embedsIPv4, "\(text)")
        #expect(IPAddress.v6(address).policyForms == [.v6(address)])
    }

    @Test func anIPv4AddressIsItsOnlyForm() {
        let address = IPAddress.v4(Self.v4("10.1.2.3"))
        #expect(address.policyForms == [address])
    }
}

extension Array where Element: Equatable {
    fileprivate func uniqued() -> [Element] {
        var result: [Element] = []
        for element in self where !result.contains(element) { result.append(element) }
        return result
    }
}
