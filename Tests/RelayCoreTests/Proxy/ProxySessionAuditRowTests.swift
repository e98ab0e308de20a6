import Testing
@testable import RelayCore

/// What the audit rows of a session say about targets and statuses: a reviewer reads them
/// without the wire, so they must name the target once and the status actually sent.
@Suite struct ProxySessionAuditRowTests {
    static func settings(_ rules: String) throws -> ProxySession.Settings {
        let config = try ConfigParser.parse(text: "listen 127.0.0.1:0\n" + rules, file: "rows.conf") { _, _ in [] }
        return ProxySession.Settings(registry: config.registry)
    }

    static func entries(_ actions: [ProxySessionAction]) -> [AuditEntry] {
        ProxySessionTests.auditEntries(actions)
    }

    @Test func anIPv6TargetIsBracketedOnceInEveryRow() throws {
        let settings = try Self.settings("server [2001:db8::/32]:443\n")
        // Allowed: the open row and the close row of a connect that fails.
        var session = ProxySession(settings: settings)
        let opened = ProxySessionTests.feed(&session, ProxySessionTests.bytes("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n"))
        let open = try #require(Self.entries(opened).first)
        #expect(open.target == "[2001:db8::1]:443")
        #expect(open.resolved == "[2001:db8::1]:443")
        _ = session.handle(.auditCommitted, now: 2)
        let failed = session.handle(.upstreamConnectFailed(.upstreamRefused), now: 3)
        #expect(Self.entries(failed).first?.target == "[2001:db8::1]:443")

        // Refused by the registry, and refused by the normaliser (a zone id).
        for (target, expected) in [("[2001:db9::1]:443", "[2001:db9::1]:443"), ("[fe80::1%25eth0]:443", "[fe80::1%25eth0]:443"),
                                   ("[::1]:19002", "[::1]:19002")] {
            var refused = ProxySession(settings: settings)
            let actions = ProxySessionTests.feed(&refused, ProxySessionTests.bytes("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n"))
            #expect(Self.entries(actions).map(\.target) == [expected])
        }
    }
}
