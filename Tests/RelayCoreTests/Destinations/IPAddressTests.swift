import Testing
@testable import RelayCore

@Suite("IP addresses and CIDR")
struct IPAddressTests {
    @Test func strictIPv4RoundTrips() {
        #expect(IPv4Address(strict: "192.168.1.20")?.value == 0xC0A8_0114)
        #expect(IPv4Address(strict: "192.168.1.20")?.description == "192.168.1.20")
        for bad in ["", "1.2.3.", ".1.2.3", "1..2.3", "00.1.2.3", "1.2.3.4 ", "+1.2.3.4", "1.2.3.256", "1234.1.1.1"] {
            #expect(IPv4Address(strict: bad) == nil, "\(bad)")
        }
    }

    /// Every octet value in every position, against the plain decimal rendering.
    @Test func dottedQuadFormatsEveryOctet() {
        for octet in 0...255 {
            let o = UInt8(octet)
            #expect(IPv4Address(o, 0, 255, 9).description == "\(octet).0.255.9")
            #expect(IPv4Address(100, o, 10, 99).description == "100.\(octet).10.99")
            #expect(IPv4Address(1, 22, o, 255).description == "1.22.\(octet).255")
            #expect(IPv4Address(255, 255, 255, o).description == "255.255.255.\(octet)")
        }
    }

    @Test func bytesConstructors() {
        #expect(IPAddress(bytes: [10, 1, 2, 3]) == .v4(IPv4Address(10, 1, 2, 3)))
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 15) + [1]) == .v6(IPv6Address(high: 0, low: 1)))
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        let v6 = IPv6Address(text: "2001:db8::8:800:200c:417a")
        #expect(v6.map { IPv6Address(bytes: $0.bytes) } == v6)
        #expect(IPAddress.v4(IPv4Address(1, 2, 3, 4)).bytes == [1, 2, 3, 4])
    }

    @Test("RFC 5952 text", arguments: [
        ("2001:db8:0:0:0:0:2:1", "2001:db8::2:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("1::", "1::"),
        ("0:0:0:0:0:0:0:0", "::"),
    ])
    func ipv6Text(input: String, expected: String) {
        #expect(IPv6Address(text: input)?.description == expected)
    }

    @Test func cidrEdges() throws {
        let all4 = try #require(CIDR(base: .v4(IPv4Address(1, 2, 3, 4)), prefix: 0))
        #expect(all4.base == .v4(IPv4Address(0)))
        #expect(all4.contains(.v4(IPv4Address(255, 255, 255, 255))))
        #expect(!all4.contains(.v6(IPv6Address(high: 0, low: 1))))

        let one = CIDR(address: .v4(IPv4Address(10, 0, 0, 1)))
        #expect(one.prefix == 32)
        #expect(one.contains(.v4(IPv4Address(10, 0, 0, 1))))
        #expect(!one.contains(.v4(IPv4Address(10, 0, 0, 2))))
        #expect(!one.contains(.v6(IPv6Address(mapping: IPv4Address(10, 0, 0, 1)))))

        let net = try #require(CIDR(base: .v4(IPv4Address(10, 20, 0, 0)), prefix: 16))
        #expect(net.contains(.v4(IPv4Address(10, 20, 255, 255))))
        #expect(!net.contains(.v4(IPv4Address(10, 21, 0, 0))))
        #expect(CIDR(base: .v4(IPv4Address(0)), prefix: 33) == nil)
        #expect(CIDR(base: .v4(IPv4Address(0)), prefix: -1) == nil)

        let doc = try #require(IPv6Address(text: "2001:db8::"))
        let v6net = try #require(CIDR(base: .v6(doc), prefix: 32))
        #expect(v6net.contains(.v6(try #require(IPv6Address(text: "2001:db8:ffff::1")))))
        #expect(!v6net.contains(.v6(try #require(IPv6Address(text: "2001:db9::1")))))
        let v6wide = try #require(CIDR(base: .v6(doc), prefix: 0))
        #expect(v6wide.contains(.v6(IPv6Address(high: .max, low: .max))))
        let v6host = CIDR(address: .v6(try #require(IPv6Address(text: "2001:db8::1"))))
        #expect(v6host.prefix == 128)
        #expect(v6host.contains(.v6(try #require(IPv6Address(text: "2001:db8::1")))))
        #expect(!v6host.contains(.v6(try #require(IPv6Address(text: "2001:db8::2")))))
        let v6_100 = try #require(CIDR(base: .v6(doc), prefix: 100))
        #expect(v6_100.contains(.v6(try #require(IPv6Address(text: "2001:db8::fff:ffff")))))
        #expect(!v6_100.contains(.v6(try #require(IPv6Address(text: "2001:db8::1000:0")))))
        #expect(CIDR(base: .v6(doc), prefix: 129) == nil)
    }

    @Test func portRanges() throws {
        let range = try #require(PortRange(lo: 8080, hi: 8089))
        #expect(!range.contains(8079))
        #expect(range.contains(8080))
        #expect(range.contains(8089))
        #expect(!range.contains(8090))
        #expect(PortRange(lo: 9, hi: 8) == nil)
        #expect(PortRange.all.contains(0) && PortRange.all.contains(65535))
        #expect(range.description == "8080-8089")
        #expect(PortRange(443).description == "443")
        #expect(PortRange.all.description == "*")
    }
}
