import Foundation
import Testing

extension IntegrationSuite {
    /// `check-config`, `serve` on a bad config, and `audit verify` on a tampered trail.
    @Suite("command line")
    struct CommandLineTests {
        @Test("check-config: a good config with includes exits 0")
        func goodConfig() throws {
            let dir = try TempDirectory()
            try dir.write("conf.d/apps.conf", "server .intranet.corp.example:8080-8089\nserver 10.20.0.0/16:22\n")
            let path = try dir.write("dynrelay.conf", """
            listen 127.0.0.1:0
            state-dir \(dir.path)/state
            include conf.d/*.conf
            deny .hr.corp.example
            header-timeout 10s
            max-request-head 32KiB
            audit-sync full

            """)
            let result = try RelayBinary.run(["check-config", "--config", path])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            #expect(result.stdoutText.hasPrefix("\(path): ok"), "stdout: \(result.stdoutText)")
        }

        /// (config files, expected first stderr line with `{DIR}` for the temp dir).
        static let badConfigs: [(files: [String: String], error: String)] = [
            (["dynrelay.conf": "listen 127.0.0.1:0\n  frobnicate yes\n"],
             "{DIR}/dynrelay.conf:2:3: unknown directive 'frobnicate'"),
            (["dynrelay.conf": "# comment\nlisten 127.0.0.1:70000\n"],
             "{DIR}/dynrelay.conf:2:8: bad port '70000' in '127.0.0.1:70000' (expected 0-65535, 0 = ephemeral)"),
            (["dynrelay.conf": "listen 127.0.0.1:0\ninclude missing.conf\n"],
             "{DIR}/dynrelay.conf:2:9: cannot read '{DIR}/missing.conf': No such file or directory"),
            (["dynrelay.conf": "listen 127.0.0.1:0\ninclude conf.d/*.conf\n", "conf.d/a.conf": "server app.example:443\n\nsever app2.example:443\n"],
             "{DIR}/conf.d/a.conf:3:1: unknown directive 'sever'"),
            (["dynrelay.conf": "listen 127.0.0.1:0\nheader-timeout soon\n"],
             "{DIR}/dynrelay.conf:2:16: bad duration 'soon' for 'header-timeout' (expected 1ms-7d as 10, 10s, 500ms, 5m, 1h)"),
        ]

        @Test("check-config: bad configs exit 1 with file:line:col: message", arguments: 0..<badConfigs.count)
        func badConfig(_ index: Int) throws {
            let (files, error) = Self.badConfigs[index]
            let dir = try TempDirectory()
            for (name, text) in files { try dir.write(name, text) }
            let path = dir.path + "/dynrelay.conf"
            let expected = error.replacingOccurrences(of: "{DIR}", with: dir.path)
            let result = try RelayBinary.run(["check-config", "--config", path])
            #expect(result.status == 1)
            #expect(result.stderr.split(separator: "\n").first.map(String.init) == expected, "stderr: \(result.stderr)")
        }

        @Test("serve refuses to start on a bad config: exit 1, no ready line")
        func serveRefusesBadConfig() throws {
            let dir = try TempDirectory()
            let path = try dir.write("dynrelay.conf", "listen 127.0.0.1:0\nstate-dir \(dir.path)/state\nserver app.example\n")
            let result = try RelayBinary.run(["serve", "--config", path], timeout: 20)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("\(path):3:8: "), "stderr: \(result.stderr)")
            #expect(!result.stderr.contains("ready"), "a bad config must never get as far as listening")
        }

        @Test("audit verify: ok after traffic, names seq 2 after tampering; audit query prints the rows")
        func auditVerify() throws {
            let echo = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(echo.port)"]))
            for _ in 0..<2 {
                let socket = try ProxyClient.tunnel(relayPort: relay.proxyPort, authority: "127.0.0.1:\(echo.port)")
                try socket.write("hello")
                #expect(try socket.readExactly(5) == Array("hello".utf8))
                socket.close()
            }
            _ = try ProxyClient.connect(relayPort: relay.proxyPort, authority: "unregistered.example:443")
            _ = relay.audit.waitForEvents(where: "event = 'tunnel-close'", count: 2)
            #expect(relay.stop() == 0, "SIGTERM must drain and exit 0; stderr:\n\(relay.stderr)")
            let rows = try relay.audit.query("SELECT seq FROM audit_events")
            #expect(rows.count == 5, "2 opens, 2 closes, 1 refusal; audit:\n\(relay.audit.dump())")

            let good = try RelayBinary.run(["audit", "verify", "--db", relay.auditPath])
            #expect(good.status == 0, "stderr: \(good.stderr)")
            #expect(good.stdoutText.contains("ok"), "stdout: \(good.stdoutText)")
            #expect(good.stdoutText.contains("\(rows.count) records"), "stdout: \(good.stdoutText)")

            // audit query: every row as one JSON line, in seq order; a time range of the
            // same rows; a malformed bound refused with exit 1.
            let all = try RelayBinary.run(["audit", "query", "--db", relay.auditPath])
            #expect(all.status == 0, "stderr: \(all.stderr)")
            let lines = all.stdoutText.split(separator: "\n")
            #expect(lines.count == rows.count)
            #expect(lines.enumerated().allSatisfy { $0.element.hasPrefix("{\"seq\":\($0.offset + 1),\"ts\":\"") })
            #expect(lines.filter { $0.contains("\"reason\":\"not-registered\"") }.count == 1, "stdout: \(all.stdoutText)")
            let firstTs = try #require(relay.audit.query("SELECT ts FROM audit_events WHERE seq = 2").first?["ts"] ?? nil)
            let ranged = try RelayBinary.run(["audit", "query", "--db", relay.auditPath, "--since", firstTs, "--until", "9999"])
            #expect(ranged.stdoutText.split(separator: "\n").first?.hasPrefix("{\"seq\":2,") == true, "stdout: \(ranged.stdoutText)")
            let refused = try RelayBinary.run(["audit", "query", "--db", relay.auditPath, "--since", "yesterday"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("yesterday"), "stderr: \(refused.stderr)")

            try relay.audit.execute("UPDATE audit_events SET target = 'x' WHERE seq = 2")
            let tampered = try RelayBinary.run(["audit", "verify", "--db", relay.auditPath])
            #expect(tampered.status == 1)
            #expect(tampered.stderr.contains("seq 2"), "stderr: \(tampered.stderr)")
        }
    }
}
