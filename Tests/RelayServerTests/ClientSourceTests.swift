import RelayIO
@testable import RelayServer
import Testing

/// What limits and counted refusals take for one source: an IPv4 address, an IPv6 /64.
@Suite struct ClientSourceTests {
    static func source(_ ip: String, _ port: UInt16 = 40000) throws -> ClientSource {
        ClientSource(try #require(SocketAddress(ip: ip, port: port)))
    }

    @Test func anIPv6SourceIsItsSlash64() throws {
        #expect(try Self.source("2001:db8:1:2::1") == Self.source("2001:db8:1:2:ffff:1:2:3", 1))
        #expect(try Self.source("2001:db8:1:2::1") != Self.source("2001:db8:1:3::1"))
        #expect(try Self.source("2001:db8:1:2::1").description == "2001:db8:1:2::/64")
    }

    @Test func anIPv4SourceIsItsAddressAndAMappedOneIsTheSame() throws {
        #expect(try Self.source("10.0.0.5", 1) == Self.source("10.0.0.5", 2))
        #expect(try Self.source("10.0.0.5") != Self.source("10.0.0.6"))
        #expect(try Self.source("::ffff:10.0.0.5") == Self.source("10.0.0.5"))
        #expect(try Self.source("10.0.0.5").description == "10.0.0.5")
    }

    @Test func countsHoldTheLimitPerSourceAndGiveBack() throws {
        let counts = SourceConnectionCounts()
        let one = try Self.source("2001:db8::1")
        let sameSlash64 = try Self.source("2001:db8::2")
        let other = try Self.source("10.0.0.1")
        #expect(counts.admit(one, limit: 2))
        #expect(counts.admit(sameSlash64, limit: 2))
        #expect(!counts.admit(one, limit: 2), "the /64 has its two")
        #expect(counts.admit(other, limit: 2), "another source is not held back")
        counts.release(sameSlash64)
        #expect(counts.admit(one, limit: 2), "a closed connection gives its place back")
    }
}
