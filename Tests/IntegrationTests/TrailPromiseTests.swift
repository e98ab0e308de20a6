import Foundation
import Glibc
import Testing

extension IntegrationSuite {
    /// Every open row gets a close row, even across a killed relay and a trail that could
    /// not write for a while; and what the trail lost, it says.
    @Suite("the trail's promise across crashes and write failures")
    struct TrailPromiseTests {
        @Test("SIGKILL with a tunnel and a forward open: the restart closes both as relay-crashed, once, and says so")
        func killedRelayIsVisibleAfterRestart() throws {
            let echo = try EchoServer()
            let state = try TempDirectory()
            let config = """
                listen 127.0.0.1:0
                forward 127.0.0.1:0 to 127.0.0.1:\(echo.port)
                state-dir \(state.path)/state
                server 127.0.0.1:\(echo.port)
                """
            let audit = AuditDB(path: state.path + "/state/audit.db")
            let killed = try RelayProcess(config: config)
            let streams = try ProxyClient.relayingTunnelAndForward(killed, echoPort: echo.port)
            defer { streams.tunnel.close(); streams.forwarded.close() }
            kill(killed.pid, SIGKILL)
            killed.stop()
            #expect(try audit.events(where: "event IN ('tunnel-close', 'forward-close')").isEmpty)

            let restarted = try RelayProcess(config: config)
            #expect(restarted.stderr.contains("audit: 2 streams were left open by a relay that stopped without recording their end"),
                    "\(restarted.stderr)")
            let closes = try audit.events(where: "event IN ('tunnel-close', 'forward-close')")
            #expect(closes.map { $0["event"] ?? "" } == ["tunnel-close", "forward-close"], "audit:\n\(audit.dump())")
            for close in closes {
                #expect(close["reason"] == "relay-crashed")
                #expect(close["bytes_up"] == nil && close["bytes_down"] == nil, "byte counts are unknown, not zero")
                #expect(close["target"] == "127.0.0.1:\(echo.port)")
            }
            let opens = try audit.events(where: "event IN ('tunnel-open', 'forward-open')")
            #expect(Set(opens.map { $0["session"] ?? "" }) == Set(closes.map { $0["session"] ?? "" }))
            #expect(restarted.stop() == 0)
            let verify = try RelayBinary.run(["audit", "verify", "--db", audit.path])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")

            // A clean stop leaves nothing to close at the next start.
            let third = try RelayProcess(config: config)
            #expect(!third.stderr.contains("left open"), "\(third.stderr)")
            #expect(third.stop() == 0)
            #expect(try audit.events(where: "reason = 'relay-crashed'").count == 2)
        }

        @Test("a second serve on the same state directory refuses to start and takes no open stream for a crash")
        func secondServeOnTheSameState() throws {
            let echo = try EchoServer()
            let state = try TempDirectory()
            let config = "listen 127.0.0.1:0\nstate-dir \(state.path)/state\nserver 127.0.0.1:\(echo.port)\n"
            let first = try RelayProcess(config: config)
            defer { first.stop() }
            let tunnel = try ProxyClient.tunnel(relayPort: first.proxyPort, authority: "127.0.0.1:\(echo.port)")
            try tunnel.write("ping")
            #expect(try tunnel.readExactly(4) == Array("ping".utf8))
            let configPath = try state.write("second.conf", config)
            let second = try RelayBinary.run(["serve", "--config", configPath], timeout: 10)
            #expect(second.status != 0)
            #expect(second.stderr.contains("another dynrelay serve is using the state directory"), "\(second.stderr)")
            let audit = AuditDB(path: state.path + "/state/audit.db")
            #expect(try audit.events(where: "reason = 'relay-crashed'").isEmpty, "the live tunnel was taken for a crash")
            try tunnel.write("pong")
            #expect(try tunnel.readExactly(4) == Array("pong".utf8), "the first relay is untouched")
        }

        @Test("rows given up while the trail cannot write: one audit-lost row counts them, the tunnel's close row follows")
        func lostRowsAreRecorded() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            defer { relay.stop() }
            let tunnel = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            try tunnel.write("ping")
            #expect(try tunnel.readExactly(4) == Array("ping".utf8))
            // A trigger stands in for a full disk: every insert fails.
            try relay.audit.alterSchema("""
                CREATE TRIGGER stand_in_for_a_full_disk BEFORE INSERT ON audit_events
                BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                """)
            // New streams are refused while nothing can be recorded; their refusals are lost too.
            let (_, refused) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
            Expect.refusal(refused, status: 500, reason: "internal-error")
            let (_, unregistered) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "127.0.0.2:1")
            #expect(unregistered.status == 403)
            tunnel.shutdownWrite()
            #expect(try tunnel.readToEOF().isEmpty)
            #expect(eventually(seconds: 5) { relay.stderr.contains("rows could not be stored after 3 attempts") }, "\(relay.stderr)")
            try relay.audit.alterSchema("DROP TRIGGER stand_in_for_a_full_disk")

            let lost = relay.audit.waitForEvents(where: "event = 'audit-lost'")
            #expect(lost.count == 1, "audit:\n\(relay.audit.dump())")
            let summary = lost.first?["reason"] ?? ""
            #expect(summary.contains(": 2 refused, 1 tunnel-close;"), "\(summary)")
            let close = relay.audit.waitForEvents(where: "event = 'tunnel-close'")
            #expect(close.first?["reason"] == "audit-lost: completed", "audit:\n\(relay.audit.dump())")
            #expect(close.first?["bytes_up"] == "4" && close.first?["bytes_down"] == "4")
            #expect(relay.stop() == 0)
            #expect(try RelayBinary.run(["audit", "verify", "--db", relay.auditPath]).status == 0)
        }
    }
}
