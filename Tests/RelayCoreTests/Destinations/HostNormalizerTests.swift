import Testing
@testable import RelayCore

/// The contract's table of request-host forms, each accepted or refused with its reason.
@Suite("HostNormalizer")
struct HostNormalizerTests {
    static let label63 = String(repeating: "a", count: 63)
    /// 63+1+63+1+63+1+61 = 253 characters.
    static let name253 = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")

    @Test("accepted names are lowercased with one trailing dot dropped", arguments: [
        ("example.com", "example.com"),
        ("EXAMPLE.Com", "example.com"),
        ("App1.Corp.Example.", "app1.corp.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("XN--BCHER-KVA.EXAMPLE", "xn--bcher-kva.example"),
        ("under_score.example", "under_score.example"),
        ("1e100.net", "1e100.net"),
        ("123.example", "123.example"),
        ("0x.example", "0x.example"),
        ("localhost", "localhost"),
        ("a-b.c-d", "a-b.c-d"),
        ("\(label63).example", "\(label63).example"),
        (name253, name253),
        (name253 + ".", name253),
    ])
    func acceptsNames(input: String, expected: String) {
        #expect(HostNormalizer.normalize(input, bracketed: false) == .success(.name(expected)))
    }

    @Test("canonical dotted quads are IPv4", arguments: [
        ("127.0.0.1", IPv4Address(127, 0, 0, 1)),
        ("0.0.0.0", IPv4Address(0, 0, 0, 0)),
        ("255.255.255.255", IPv4Address(255, 255, 255, 255)),
        ("10.0.100.9", IPv4Address(10, 0, 100, 9)),
        ("10.0.0.1.", IPv4Address(10, 0, 0, 1)),
    ])
    func acceptsIPv4(input: String, expected: IPv4Address) {
        #expect(HostNormalizer.normalize(input, bracketed: false) == .success(.ipv4(expected)))
    }

    @Test("IP-looking names that are not canonical dotted quads are ambiguous", arguments: [
        "2130706433",    // decimal integer
        "0x7f000001",    // hex integer
        "0X7F000001",    // uppercase hex
        "0x7f.1",        // hex part, shortened
        "0177.0.0.1",    // octal
        "127.1",         // shortened
        "010.0.0.1",     // leading zero (octal to inet_aton)
        "1.2.3.04",
        "1.2.3.4.5",     // five parts
        "256.1.1.1",     // out of range
        "example.123",   // last label numeric
        "example.0x1f",
        "1.2.3",
    ])
    func refusesIPLookalikes(input: String) {
        #expect(reason(input) == .ambiguousHost)
    }

    @Test("percent-encoding, userinfo, raw Unicode and zone ids are ambiguous", arguments: [
        ("%2e", false),
        ("exa%6dple.com", false),
        ("user@host", false),
        ("user:pass@host.example", false),
        ("bücher.example", false),
        ("ｅxample.com", false),
        ("fe80::1%eth0", true),
        ("[fe80::1%eth0]", false),
        ("fe80::1%25eth0", true),
    ])
    func refusesAmbiguousForms(input: String, bracketed: Bool) {
        #expect(reason(input, bracketed: bracketed) == .ambiguousHost)
    }

    @Test("structurally broken hosts are bad targets", arguments: [
        "",
        ".",
        "a..b",
        "example.com..",              // double trailing dot
        ".example.com",
        "-a.example",
        "a-.example",
        "\(label63)a.example",        // 64-char label
        name253 + "b",                // 254 chars
        "exa mple.com",
        "a/b.example",
        "host\u{0}.example",
        "::1",                        // IPv6 without brackets
        "[::1",
        "example.com]",
    ])
    func refusesBroken(input: String) {
        #expect(reason(input) == .badTarget)
    }

    @Test("IPv6 only inside brackets, parsed strictly", arguments: [
        ("::1", "::1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::", "::"),
        ("fe80::1", "fe80::1"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ("::FFFF:7F00:1", "::ffff:127.0.0.1"),
    ])
    func acceptsIPv6(input: String, canonical: String) throws {
        let host = try HostNormalizer.normalize(input, bracketed: true).get()
        guard case .ipv6(let address) = host else {
            Issue.record("expected IPv6, got \(host)")
            return
        }
        #expect(address.description == canonical)
        #expect(host.description == "[\(canonical)]")
    }

    @Test("inet_pton laxness is fenced in", arguments: [
        "1::2::3", ":1::", "1:", "12345::", "::ffff:01.2.3.4", "::ffff:1.2.3", "1:2:3:4:5:6:7:8:9",
        "::1 ", "g::1", "1.2.3.4", "example.com", "", "::1\u{0}ff", "[::1]x",
    ])
    func refusesBadIPv6(input: String) {
        #expect(reason(input, bracketed: true) == .badTarget)
    }

    @Test("IPv4-mapped IPv6 is returned and flagged, the matcher decides")
    func flagsMapped() throws {
        let host = try HostNormalizer.normalize("[::ffff:127.0.0.1]", bracketed: false).get()
        guard case .ipv6(let address) = host else {
            Issue.record("expected IPv6")
            return
        }
        #expect(address.isIPv4Mapped)
        #expect(address.mappedIPv4 == IPv4Address(127, 0, 0, 1))
        #expect(IPv6Address(text: "::1")?.isIPv4Mapped == false)
        #expect(IPv6Address(text: "::127.0.0.1")?.isIPv4Mapped == false)
    }

    /// The normaliser keeps one canonical IPv6 host for every spelling that carries IPv4;
    /// whether it may be reached is the registry's call (only an exact registration).
    @Test("IPv6 carrying IPv4 is returned canonical and flagged", arguments: [
        ("[::10.1.2.3]", "::a01:203"), ("[::FFFF:0:10.1.2.3]", "::ffff:0:a01:203"),
        ("[64:FF9B::10.1.2.3]", "64:ff9b::a01:203"), ("[2002:0a01:0203::]", "2002:a01:203::"),
        ("[2001:0000:a01:203::1]", "2001:0:a01:203::1"), ("[2001:db8::0:5efe:10.1.2.3]", "2001:db8::5efe:a01:203"),
    ])
    func flagsEmbeddedIPv4(input: String, canonical: String) throws {
        let host = try HostNormalizer.normalize(input, bracketed: false).get()
        guard case .ipv6(let address) = host else {
            Issue.record("expected IPv6")
            return
        }
        #expect(address.description == canonical)
        #expect(address.embedsIPv4)
        #expect(address.embeddedIPv4.map(\.address).contains(IPv4Address(10, 1, 2, 3)))
    }

    private func reason(_ input: String, bracketed: Bool = false) -> ReasonCode? {
        if case .failure(let error) = HostNormalizer.normalize(input, bracketed: bracketed) {
            #expect(!error.detail.isEmpty)
            return error.reason
        }
        return nil
    }
}
