import Testing
@testable import RelayCore

/// The relay's own host through a whole session: its listeners are never reached (a loop
/// through itself), its interface addresses are guarded like loopback.
@Suite struct ProxySessionLocalHostTests {
    static func localHost() -> LocalHost {
        let localHost = LocalHost()
        localHost.update(interfaceAddresses: [v4("127.0.0.1"), v4("10.0.0.5"), v6("::1")])
        localHost.update(listeners: [ListenAddress(host: v4("0.0.0.0"), port: 3128)])
        return localHost
    }

    static func settings(_ rules: String) throws -> ProxySession.Settings {
        let config = try ConfigParser.parse(text: "listen 0.0.0.0:3128\nauth none\n" + rules, file: "host.conf") { _, _ in [] }
        return ProxySession.Settings(registry: config.registry, localHost: localHost())
    }

    static func connects(_ actions: [ProxySessionAction]) -> [ProxySessionAction] {
        actions.filter { if case .connect = $0 { return true } else { return false } }
    }

    @Test func aConnectToTheRelaysOwnListenerIs403RelayLoopAtEverySplit() throws {
        let settings = try Self.settings("server 127.0.0.1:3128\nserver 10.0.0.0/8:*\nserver [::1]:3128\n")
        for target in ["127.0.0.1:3128", "10.0.0.5:3128", "[::1]:3128"] {
            let head = ProxySessionTests.bytes("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            for split in 0...head.count {
                var session = ProxySession(settings: settings)
                let actions = ProxySessionTests.feed(&session, head, splitAt: [split])
                #expect(Self.connects(actions).isEmpty, "\(target) split \(split)")
                let body = ProxySessionTests.refusalBody(actions) ?? ""
                #expect(body.hasPrefix("HTTP/1.1 403 ") && body.hasSuffix("\r\n\r\nrelay-loop\n"), "\(target) split \(split): \(body)")
                let rows = ProxySessionTests.auditEntries(actions)
                #expect(rows.map(\.event) == [.refused])
                #expect(rows.first?.reason == .relayLoop)
                #expect(rows.first?.status == 403)
                #expect(rows.first?.resolved == Endpoint.text(target.hasPrefix("[") ? v6("::1") : v4(String(target.split(separator: ":")[0])), 3128))
                #expect(actions.last == .closeClient)
            }
        }
    }

    @Test func aNameOrAnAbsoluteFormRequestReachingTheListenerIsALoopToo() throws {
        let settings = try Self.settings("server app.corp.example:3128\nserver 127.0.0.1:3128\n")
        var named = ProxySession(settings: settings)
        _ = ProxySessionTests.feed(&named, ProxySessionTests.bytes("CONNECT app.corp.example:3128 HTTP/1.1\r\nHost: app.corp.example:3128\r\n\r\n"))
        let resolved = named.handle(.resolved([v4("10.1.2.3"), v6("::ffff:10.0.0.5")]), now: 2)
        #expect(ProxySessionTests.auditEntries(resolved).first?.reason == .relayLoop)
        #expect(Self.connects(resolved).isEmpty)

        var forwarded = ProxySession(settings: settings)
        let actions = ProxySessionTests.feed(&forwarded, ProxySessionTests.bytes("GET http://127.0.0.1:3128/ HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n"))
        #expect(ProxySessionTests.auditEntries(actions).first?.reason == .relayLoop)
        #expect(Self.connects(actions).isEmpty)
    }

    /// One write of 300 CONNECTs to the relay's own port: one refusal, no tunnel, and the
    /// rest is never read as requests.
    @Test func threeHundredPipelinedConnectsToItselfOpenNothing() throws {
        let settings = try Self.settings("server 127.0.0.1:3128\n")
        let one = "CONNECT 127.0.0.1:3128 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n"
        var session = ProxySession(settings: settings)
        let actions = ProxySessionTests.feed(&session, ProxySessionTests.bytes(String(repeating: one, count: 300)))
        #expect(Self.connects(actions).isEmpty)
        #expect(ProxySessionTests.auditEntries(actions).map(\.reason) == [.relayLoop])
        #expect(actions.last == .closeClient)
        #expect(session.isFinished)
    }

    @Test func theHostsOwnAddressIsGuardedUnlessARuleNamesIt() throws {
        let head = ProxySessionTests.bytes("CONNECT 10.0.0.5:8080 HTTP/1.1\r\nHost: 10.0.0.5:8080\r\n\r\n")
        var guarded = ProxySession(settings: try Self.settings("server 10.0.0.0/8:*\n"))
        let refused = ProxySessionTests.feed(&guarded, head)
        #expect(ProxySessionTests.auditEntries(refused).first?.reason == .guardedAddress)
        #expect(ProxySessionTests.refusalBody(refused)?.hasPrefix("HTTP/1.1 403 ") == true)
        #expect(Self.connects(refused).isEmpty)

        for split in 0...head.count {
            var named = ProxySession(settings: try Self.settings("server 10.0.0.0/8:*\nserver 10.0.0.5:8080\n"))
            let allowed = ProxySessionTests.feed(&named, head, splitAt: [split])
            #expect(Self.connects(allowed) == [.connect(v4("10.0.0.5"), port: 8080)], "split \(split)")
            #expect(ProxySessionTests.auditEntries(allowed).map(\.event) == [.tunnelOpen], "split \(split)")
        }

        // Without a LocalHost (the default) nothing is the host's own.
        var unknown = ProxySession(settings: ProxySession.Settings(registry: try Self.settings("server 10.0.0.0/8:*\n").registry))
        #expect(Self.connects(ProxySessionTests.feed(&unknown, head)).count == 1)
    }
}
