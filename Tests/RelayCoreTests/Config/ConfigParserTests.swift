import Testing
@testable import RelayCore

@Suite("ConfigParser directives")
struct ConfigParserTests {
    @Test("every directive on its happy path")
    func everyDirective() throws {
        let config = try parseConfig("""
            # dynrelay test config
            listen 127.0.0.1:3128
            listen [::1]:0            # ephemeral
            state-dir /var/lib/dynrelay-test
            loops 4
            max-request-head 64k
            max-headers 50
            max-connections 2000
            header-timeout 500ms
            connect-timeout 5
            idle-timeout 5m
            drain-timeout 1h
            audit-sync normal
            server app1.corp.example:443
            server .Intranet.Corp.Example.:8080-8089
            server 10.20.0.0/16:22
            server [2001:db8::/32]:443
            server 10.1.2.3:*
            deny *:25
            deny [2001:db8::1]
            forward 127.0.0.1:2222 to app1.corp.example:443
            audit-backlog 5000
            max-tunnels-per-principal 7
            """)
        #expect(config.listeners.map(\.description) == ["127.0.0.1:3128", "[::1]:0"])
        #expect(config.stateDir == "/var/lib/dynrelay-test")
        #expect(config.loops == 4)
        #expect(config.limits == RelayLimits(maxRequestHead: 65536, maxHeaders: 50, maxConnections: 2000, maxAuditBacklog: 5000,
                                             maxTunnelsPerPrincipal: 7))
        #expect(config.timeouts == RelayTimeouts(header: .milliseconds(500), connect: .seconds(5),
                                                 idle: .seconds(300), drain: .seconds(3600)))
        #expect(config.auditSync == .normal)
        #expect(config.sourceFiles == ["main.conf"])
        let expectedRules: [(DestinationRule.Kind, String, String, Int)] = [
            (.server, "app1.corp.example", "443", 14),
            (.server, ".intranet.corp.example", "8080-8089", 15),
            (.server, "10.20.0.0/16", "22", 16),
            (.server, "[2001:db8::/32]", "443", 17),
            (.server, "10.1.2.3", "*", 18),
            (.deny, "*", "25", 19),
            (.deny, "[2001:db8::1]", "*", 20),
        ]
        #expect(config.rules.count == expectedRules.count)
        for (rule, expected) in zip(config.rules, expectedRules) {
            #expect(rule.kind == expected.0)
            #expect(rule.host.description == expected.1)
            #expect(rule.ports.description == expected.2)
            #expect(rule.location == RelayCore.SourceLocation(file: "main.conf", line: expected.3, column: 1))
            #expect(rule.rule == "main.conf:\(expected.3)")
        }
        #expect(config.forwards == [ForwardDirective(
            listen: ListenAddress(host: v4("127.0.0.1"), port: 2222), host: .name("app1.corp.example"), port: 443,
            location: RelayCore.SourceLocation(file: "main.conf", line: 21, column: 1))])
        #expect(config.registry.decide(host: .name("app1.corp.example"), port: 443) == .allow(rule: "main.conf:14"))
    }

    @Test("defaults when nothing but a listener is given")
    func defaults() throws {
        let config = try parseConfig("listen 127.0.0.1:3128")
        #expect(config.stateDir == "/var/lib/dynrelay")
        #expect(config.loops == nil)
        #expect(config.limits == RelayLimits(maxRequestHead: 32768, maxHeaders: 100, maxConnections: 10000))
        #expect(config.timeouts == RelayTimeouts(header: .seconds(10), connect: .seconds(10), idle: .seconds(300), drain: .seconds(30)))
        #expect(config.auditSync == .normal)
        #expect(config.rules.isEmpty && config.forwards.isEmpty)
    }

    @Test("a forward alone is enough to serve")
    func forwardOnly() throws {
        let config = try parseConfig("server [2001:db8::5]:22\nforward [::1]:2222 to [2001:db8::5]:22")
        #expect(config.listeners.isEmpty)
        #expect(config.forwards.first?.listen.description == "[::1]:2222")
        #expect(config.forwards.first?.host == host("[2001:db8::5]"))
    }

    @Test("a forward to a loopback server registered by address")
    func forwardToRegisteredLoopback() throws {
        let config = try parseConfig("server 127.0.0.1:8081\nforward 127.0.0.1:0 to 127.0.0.1:8081")
        #expect(config.forwards.count == 1)
    }

    @Test("sizes", arguments: [
        ("32768", 32768), ("32k", 32768), ("32K", 32768), ("32KiB", 32768),
        ("1m", 1_048_576), ("1M", 1_048_576), ("1MiB", 1_048_576), ("1024", 1024), ("16MiB", 16_777_216),
    ])
    func sizes(text: String, bytes: Int) throws {
        #expect(try parseConfig("listen 127.0.0.1:1\nmax-request-head \(text)").limits.maxRequestHead == bytes)
    }

    @Test("durations", arguments: [
        ("10", Duration.seconds(10)), ("10s", .seconds(10)), ("500ms", .milliseconds(500)),
        ("5m", .seconds(300)), ("1h", .seconds(3600)), ("1ms", .milliseconds(1)), ("168h", .seconds(604_800)),
    ])
    func durations(text: String, duration: Duration) throws {
        #expect(try parseConfig("listen 127.0.0.1:1\nconnect-timeout \(text)").timeouts.connect == duration)
    }

    @Test("comments, blank lines, tabs and CRLF")
    func lexing() throws {
        let config = try parseConfig("\n   \n# only a comment\n\tlisten\t127.0.0.1:3128# no space before the comment\r\n\n  server\t\tapp.example:443   # trailing\r\n")
        #expect(config.listeners.map(\.description) == ["127.0.0.1:3128"])
        #expect(config.rules.first?.location == RelayCore.SourceLocation(file: "main.conf", line: 6, column: 3))
        #expect(configError("listen 127.0.0.1:1\n\t\tbogus") == "main.conf:2:3: unknown directive 'bogus'")
        #expect(configError("listen 127.0.0.1:1\r\nbogus\r\n") == "main.conf:2:1: unknown directive 'bogus'")
        #expect(configError("listen 127.0.0.1:1 # bogus\n#bogus\n  # bogus") == nil)
    }

    @Test("tokens are split in Unicode scalars so columns match editors")
    func lexerColumns() {
        let lines = ConfigLexer.lines(of: "a\tbé  c\n\n d#x\n")
        #expect(lines.map(\.number) == [1, 3])
        #expect(lines[0].tokens == [ConfigToken(text: "a", column: 1), ConfigToken(text: "bé", column: 3),
                                    ConfigToken(text: "c", column: 7)])
        #expect(lines[1].tokens == [ConfigToken(text: "d", column: 2)])
    }

    @Test func pathArithmetic() {
        #expect(PathLexical.normalize("/etc/dynrelay/./conf.d/../x.conf") == "/etc/dynrelay/x.conf")
        #expect(PathLexical.normalize("a//b/") == "a/b")
        #expect(PathLexical.normalize("../a") == "../a")
        #expect(PathLexical.normalize("/..") == "/")
        #expect(PathLexical.resolve("conf.d/*.conf", relativeTo: "/etc/dynrelay/dynrelay.conf") == "/etc/dynrelay/conf.d/*.conf")
        #expect(PathLexical.resolve("x.conf", relativeTo: "dynrelay.conf") == "x.conf")
        #expect(PathLexical.resolve("x.conf", relativeTo: "/main.conf") == "/x.conf")
        #expect(PathLexical.resolve("/abs.conf", relativeTo: "/etc/a.conf") == "/abs.conf")
    }
}
