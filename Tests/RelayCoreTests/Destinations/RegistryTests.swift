import Testing
@testable import RelayCore

@Suite("Registry decisions")
struct RegistryTests {
    static let rules = """
        server app1.corp.example:443
        server .intranet.corp.example:8080-8089
        server 10.20.0.0/16:22
        deny   .hr.intranet.corp.example
        server [2001:db8::/32]:443
        deny   10.20.99.0/24:*
        server 10.1.2.3:*
        """

    @Test("decide names the rule's file:line", arguments: [
        ("app1.corp.example", 443, Decision.allow(rule: "main.conf:2")),
        ("APP1.corp.example.", 443, .allow(rule: "main.conf:2")),
        ("app1.corp.example", 444, .deny(rule: nil, reason: .notRegistered)),
        ("x.app1.corp.example", 443, .deny(rule: nil, reason: .notRegistered)),
        ("corp.example", 443, .deny(rule: nil, reason: .notRegistered)),
        // .domain covers the domain itself and all subdomains, not siblings
        ("intranet.corp.example", 8080, .allow(rule: "main.conf:3")),
        ("a.b.intranet.corp.example", 8089, .allow(rule: "main.conf:3")),
        ("evilintranet.corp.example", 8080, .deny(rule: nil, reason: .notRegistered)),
        ("intranet.corp.example.evil", 8080, .deny(rule: nil, reason: .notRegistered)),
        // port range boundaries
        ("intranet.corp.example", 8079, .deny(rule: nil, reason: .notRegistered)),
        ("intranet.corp.example", 8090, .deny(rule: nil, reason: .notRegistered)),
        // deny wins over an earlier server; deny without ports covers every port
        ("hr.intranet.corp.example", 8080, .deny(rule: "main.conf:5", reason: .denied)),
        ("x.hr.intranet.corp.example", 8085, .deny(rule: "main.conf:5", reason: .denied)),
        ("hr.intranet.corp.example", 1, .deny(rule: "main.conf:5", reason: .denied)),
        ("hr.intranet.corp.example", 65535, .deny(rule: "main.conf:5", reason: .denied)),
        // CIDR
        ("10.20.0.0", 22, .allow(rule: "main.conf:4")),
        ("10.20.255.255", 22, .allow(rule: "main.conf:4")),
        ("10.21.0.0", 22, .deny(rule: nil, reason: .notRegistered)),
        ("10.20.1.1", 23, .deny(rule: nil, reason: .notRegistered)),
        ("10.20.99.5", 22, .deny(rule: "main.conf:7", reason: .denied)),
        // single address, all ports
        ("10.1.2.3", 1, .allow(rule: "main.conf:8")),
        ("10.1.2.3", 65535, .allow(rule: "main.conf:8")),
        ("10.1.2.4", 22, .deny(rule: nil, reason: .notRegistered)),
        // IPv6
        ("[2001:db8::1]", 443, .allow(rule: "main.conf:6")),
        ("[2001:db8:ffff::1]", 443, .allow(rule: "main.conf:6")),
        ("[2001:db9::1]", 443, .deny(rule: nil, reason: .notRegistered)),
        // mapped forms are ambiguous unless registered exactly, but deny sees through them
        ("[::ffff:10.1.2.3]", 80, .deny(rule: nil, reason: .ambiguousHost)),
        ("[::ffff:10.20.99.5]", 22, .deny(rule: "main.conf:7", reason: .denied)),
    ])
    func decide(hostText: String, port: Int, expected: Decision) throws {
        let registry = try registry(Self.rules)
        #expect(registry.decide(host: host(hostText), port: UInt16(port)) == expected)
    }

    @Test("deny wins regardless of order")
    func denyWinsEitherOrder() throws {
        let denyFirst = try registry("deny app.example:443\nserver app.example:443")
        let denyLast = try registry("server app.example:443\ndeny app.example:443")
        #expect(denyFirst.decide(host: host("app.example"), port: 443) == .deny(rule: "main.conf:2", reason: .denied))
        #expect(denyLast.decide(host: host("app.example"), port: 443) == .deny(rule: "main.conf:3", reason: .denied))
        let portless = try registry("server app.example:*\ndeny app.example")
        for port in [0, 1, 443, 65535] {
            #expect(portless.decide(host: host("app.example"), port: UInt16(port)) == .deny(rule: "main.conf:3", reason: .denied))
        }
    }

    @Test("a domain rule never matches a sibling that shares its suffix")
    func siblingDomains() throws {
        let registry = try registry("server .corp.example:443")
        #expect(registry.decide(host: host("corp.example"), port: 443) == .allow(rule: "main.conf:2"))
        #expect(registry.decide(host: host("a.corp.example"), port: 443) == .allow(rule: "main.conf:2"))
        #expect(registry.decide(host: host("evilcorp.example"), port: 443) == .deny(rule: nil, reason: .notRegistered))
        #expect(registry.decide(host: host("corp.example.evil.example"), port: 443) == .deny(rule: nil, reason: .notRegistered))
    }

    @Test("wildcard hosts, first matching server is named")
    func wildcard() throws {
        let registry = try registry("server *:443\nserver app.example:443\ndeny *:25")
        #expect(registry.decide(host: host("app.example"), port: 443) == .allow(rule: "main.conf:2"))
        #expect(registry.decide(host: host("10.0.0.1"), port: 443) == .allow(rule: "main.conf:2"))
        #expect(registry.decide(host: host("app.example"), port: 25) == .deny(rule: "main.conf:4", reason: .denied))
        #expect(registry.decide(host: host("[::ffff:10.0.0.1]"), port: 443) == .deny(rule: nil, reason: .ambiguousHost))
    }

    @Test("an IPv4-mapped literal is allowed only by a rule naming that exact IPv6 address")
    func mappedRegistered() throws {
        let registry = try registry("server [::ffff:10.1.2.3]:80\nserver [::ffff:10.0.0.0/104]:80")
        #expect(registry.decide(host: host("[::ffff:10.1.2.3]"), port: 80) == .allow(rule: "main.conf:2"))
        #expect(registry.decide(host: host("[::ffff:10.1.2.4]"), port: 80) == .deny(rule: nil, reason: .ambiguousHost))
        #expect(registry.decide(host: host("[::ffff:10.1.2.3]"), port: 81) == .deny(rule: nil, reason: .ambiguousHost))
        #expect(registry.decide(host: host("10.1.2.3"), port: 80) == .deny(rule: nil, reason: .notRegistered))
    }

    @Test("guarded addresses are refused after resolution without an address rule", arguments: [
        "127.0.0.1", "127.255.0.9", "::1", "169.254.169.254", "169.254.1.1", "fe80::", "fe80::1",
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "0.0.0.0", "::", "224.0.0.1", "ff02::1",
        "fd00:ec2::254",
    ])
    func guardRefuses(address: String) throws {
        let registry = try registry("server app.example:*\nserver 0.0.0.0/0:*\nserver [::/0]:*")
        let ip = address.contains(":") ? v6(address) : v4(address)
        #expect(registry.checkResolved(address: ip, port: 80, allowRule: "main.conf:2", localHost: nil)
                == .deny(rule: nil, reason: .guardedAddress))
    }

    @Test("ordinary addresses pass with the rule from decide", arguments: [
        "10.0.0.1", "192.0.2.7", "2001:db8::1", "::ffff:10.0.0.1", "169.253.255.255", "223.255.255.255",
    ])
    func ordinaryPasses(address: String) throws {
        let registry = try registry("server app.example:*")
        let ip = address.contains(":") ? v6(address) : v4(address)
        #expect(registry.checkResolved(address: ip, port: 443, allowRule: "main.conf:2", localHost: nil) == .allow(rule: "main.conf:2"))
    }

    @Test("a server rule naming guarded space by address lifts the guard, for that port only")
    func guardLifted() throws {
        let registry = try registry("""
            server 127.0.0.1:8081
            server [::1]:8081
            server 169.254.169.254:80
            server [fe80::/64]:8081
            server [::ffff:127.0.0.1]:8082
            server 0.0.0.0:8081
            """)
        func check(_ ip: IPAddress, _ port: UInt16) -> Decision {
            registry.checkResolved(address: ip, port: port, allowRule: "x:1", localHost: nil)
        }
        #expect(check(v4("127.0.0.1"), 8081) == .allow(rule: "main.conf:2"))
        #expect(check(v4("127.0.0.1"), 8080) == .deny(rule: nil, reason: .guardedAddress))
        #expect(check(v4("127.0.0.2"), 8081) == .deny(rule: nil, reason: .guardedAddress))
        #expect(check(v6("::1"), 8081) == .allow(rule: "main.conf:3"))
        #expect(check(v4("169.254.169.254"), 80) == .allow(rule: "main.conf:4"))
        #expect(check(v6("fe80::1"), 8081) == .allow(rule: "main.conf:5"))
        #expect(check(v6("fe80:0:0:1::1"), 8081) == .deny(rule: nil, reason: .guardedAddress))
        #expect(check(v6("::ffff:127.0.0.1"), 8081) == .allow(rule: "main.conf:2"))
        #expect(check(v6("::ffff:127.0.0.1"), 8082) == .allow(rule: "main.conf:6"))
        #expect(check(v4("0.0.0.0"), 8081) == .allow(rule: "main.conf:7"))
        #expect(check(v6("::"), 8081) == .deny(rule: nil, reason: .guardedAddress))
    }

    @Test("deny CIDRs apply to every resolved address, mapped or not, and beat a guard exemption")
    func resolvedDeny() throws {
        let registry = try registry("server .corp.example:443\ndeny 10.9.0.0/16\nserver 127.0.0.1:443\ndeny [::1]:443\ndeny 127.0.0.0/8:443")
        func check(_ ip: IPAddress) -> Decision {
            registry.checkResolved(address: ip, port: 443, allowRule: "main.conf:2", localHost: nil)
        }
        #expect(check(v4("10.9.1.1")) == .deny(rule: "main.conf:3", reason: .denied))
        #expect(check(v6("::ffff:10.9.1.1")) == .deny(rule: "main.conf:3", reason: .denied))
        #expect(check(v4("10.10.1.1")) == .allow(rule: "main.conf:2"))
        #expect(check(v6("::1")) == .deny(rule: "main.conf:5", reason: .denied))
        #expect(check(v4("127.0.0.1")) == .deny(rule: "main.conf:6", reason: .denied))
    }

    /// Every IPv6 spelling that carries an IPv4 address is a second name for that IPv4
    /// host: as a literal it is ambiguous unless registered exactly, and deny rules see
    /// through it before that.
    @Test("an IPv6 literal carrying IPv4 is ambiguous unless registered exactly", arguments: [
        "[::10.1.2.3]", "[::ffff:0:10.1.2.3]", "[64:ff9b::10.1.2.3]", "[64:ff9b:1:abcd::10.1.2.3]", "[2002:a01:203::1]",
        "[2001:0:a01:203::1]", "[2001:db8::5efe:10.1.2.3]", "[2001:db8::200:5efe:10.1.2.3]", "[::ffff:10.1.2.3]",
    ])
    func embeddingLiteralIsAmbiguous(literal: String) throws {
        let wide = try registry("server *:*\nserver 10.1.2.3:*\nserver [::/0]:*")
        #expect(wide.decide(host: host(literal), port: 443) == .deny(rule: nil, reason: .ambiguousHost), "\(literal)")
        let exact = try registry("server \(literal):443")
        #expect(exact.decide(host: host(literal), port: 443) == .allow(rule: "main.conf:2"), "\(literal)")
        #expect(exact.decide(host: host(literal), port: 444) == .deny(rule: nil, reason: .ambiguousHost), "\(literal)")
        let denying = try registry("server \(literal):443\ndeny 10.1.2.0/24")
        #expect(denying.decide(host: host(literal), port: 443) == .deny(rule: "main.conf:3", reason: .denied), "\(literal)")
    }

    @Test("a resolved address is checked as itself and as every IPv4 address it carries", arguments: [
        ("64:ff9b::7f00:1", Decision.deny(rule: nil, reason: .guardedAddress)),
        ("64:ff9b::169.254.169.254", .deny(rule: nil, reason: .guardedAddress)),
        ("64:ff9b:1:abcd::127.0.0.1", .deny(rule: nil, reason: .guardedAddress)),
        ("::127.0.0.1", .deny(rule: nil, reason: .guardedAddress)),
        ("::ffff:0:127.0.0.1", .deny(rule: nil, reason: .guardedAddress)),
        ("2002:7f00:1::1", .deny(rule: nil, reason: .guardedAddress)),
        ("2001:0:a01:203::80ff:fefe", .deny(rule: nil, reason: .guardedAddress)),
        ("2001:db8::5efe:169.254.169.254", .deny(rule: nil, reason: .guardedAddress)),
        ("64:ff9b::10.9.1.1", .deny(rule: "main.conf:3", reason: .denied)),
        ("2002:a09:101::", .deny(rule: "main.conf:3", reason: .denied)),
        ("2001:db8::200:5efe:10.9.1.1", .deny(rule: "main.conf:3", reason: .denied)),
        ("2001:0:a09:101::1", .deny(rule: "main.conf:3", reason: .denied)),
        ("64:ff9b::10.1.1.1", .allow(rule: "main.conf:2")),
        ("2002:a01:101::1", .allow(rule: "main.conf:2")),
    ])
    func resolvedEmbeddingForms(address: String, expected: Decision) throws {
        let registry = try registry("server .corp.example:443\ndeny 10.9.0.0/16")
        #expect(registry.checkResolved(address: v6(address), port: 443, allowRule: "main.conf:2", localHost: nil) == expected)
    }

    @Test("the guard on an embedded IPv4 address is lifted only by a rule naming it by address")
    func embeddedGuardLifted() throws {
        let registry = try registry("server .corp.example:*\nserver 127.0.0.1:8081\nserver [64:ff9b::7f00:2]:8082\nserver [64:ff9b::/96]:8083")
        func check(_ text: String, _ port: UInt16) -> Decision {
            registry.checkResolved(address: v6(text), port: port, allowRule: "main.conf:2", localHost: nil)
        }
        #expect(check("64:ff9b::7f00:1", 8081) == .allow(rule: "main.conf:3"))
        #expect(check("2002:7f00:1::", 8081) == .allow(rule: "main.conf:3"))
        #expect(check("64:ff9b::7f00:2", 8082) == .allow(rule: "main.conf:4"))
        #expect(check("64:ff9b::7f00:2", 8081) == .deny(rule: nil, reason: .guardedAddress))
        #expect(check("64:ff9b::7f00:1", 8083) == .deny(rule: nil, reason: .guardedAddress),
                "a block of translated addresses registers ordinary hosts, not guarded ones")
    }

    /// The relay's own listeners are never a destination, whatever the rules say; its own
    /// interface addresses are guarded like loopback.
    @Test("the relay's own host: endpoints refused outright, own addresses guarded")
    func localHost() throws {
        let localHost = LocalHost()
        localHost.update(interfaceAddresses: [v4("127.0.0.1"), v4("10.0.0.5")])
        localHost.update(listeners: [ListenAddress(host: v4("0.0.0.0"), port: 3128)])
        let registry = try registry("server *:*\nserver 10.0.0.0/8:*\nserver 127.0.0.1:3128\nserver 10.0.0.5:3128\nserver 10.0.0.5:8080")
        func check(_ ip: IPAddress, _ port: UInt16) -> Decision {
            registry.checkResolved(address: ip, port: port, allowRule: "main.conf:2", localHost: localHost)
        }
        #expect(check(v4("127.0.0.1"), 3128) == .deny(rule: nil, reason: .relayLoop), "no rule lifts it")
        #expect(check(v4("10.0.0.5"), 3128) == .deny(rule: nil, reason: .relayLoop))
        #expect(check(v6("::ffff:10.0.0.5"), 3128) == .deny(rule: nil, reason: .relayLoop))
        #expect(check(v4("10.0.0.5"), 8080) == .allow(rule: "main.conf:6"), "named by address")
        #expect(check(v4("10.0.0.5"), 8081) == .deny(rule: nil, reason: .guardedAddress), "a block is not a name")
        #expect(check(v4("10.0.0.6"), 8081) == .allow(rule: "main.conf:2"))
        #expect(registry.checkResolved(address: v4("10.0.0.5"), port: 8081, allowRule: "main.conf:2", localHost: nil)
                == .allow(rule: "main.conf:2"), "without a LocalHost nothing is the host's own")
        let loops = registry.checkAll([v4("10.0.0.6"), v4("10.0.0.5")], port: 3128, allowRule: "main.conf:2", localHost: localHost)
        #expect(loops.refusal?.reason == .relayLoop)
        #expect(loops.refusal?.address == v4("10.0.0.5"))
    }
}
