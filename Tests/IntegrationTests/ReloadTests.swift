import Foundation
import Testing

extension IntegrationSuite {
    /// SIGHUP (systemctl reload): new rules for new connections, established tunnels keep
    /// flowing, and a bad file is refused without touching the running config.
    @Suite("reload")
    struct ReloadTests {
        /// Waits (bounded) until the relay's stderr has said `marker` `count` times.
        static func waitForLog(_ relay: RelayProcess, _ marker: String, count: Int, timeout: Double = 10) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if relay.stderr.components(separatedBy: marker).count - 1 >= count { return true }
                usleep(20_000)
            }
            return false
        }

        static func status(_ relay: RelayProcess, _ authority: String) throws -> Int {
            let (socket, response) = try ProxyClient.connect(relayPort: relay.proxyPort, authority: authority)
            socket.close()
            return response.status
        }

        @Test("SIGHUP applies new rules, keeps tunnels, refuses a bad file")
        func reloadSwapsRulesAndKeepsTunnels() throws {
            let first = try EchoServer()
            let second = try EchoServer()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(first.port)"]))
            defer { relay.stop() }
            let established = try HealthyTunnel(relay: relay, echo: first)
            #expect(try Self.status(relay, "127.0.0.1:\(second.port)") == 403)

            // Swap: register the second server, drop the first.
            let swapped = relay.configText.replacingOccurrences(
                of: "server 127.0.0.1:\(first.port)", with: "server 127.0.0.1:\(second.port)")
            try swapped.write(toFile: relay.configPath, atomically: true, encoding: .utf8)
            kill(relay.pid, SIGHUP)
            #expect(Self.waitForLog(relay, "dynrelay: reloaded", count: 1), "stderr:\n\(relay.stderr)")
            #expect(try Self.status(relay, "127.0.0.1:\(second.port)") == 200)
            #expect(try Self.status(relay, "127.0.0.1:\(first.port)") == 403, "new connections use the new rules")
            #expect(throws: Never.self, "a tunnel opened under the old rules keeps flowing") {
                try established.roundTrip()
            }

            // A broken file is refused; the running rules stay.
            try (swapped + "bogus-directive 1\n").write(toFile: relay.configPath, atomically: true, encoding: .utf8)
            kill(relay.pid, SIGHUP)
            #expect(Self.waitForLog(relay, "reload refused", count: 1), "stderr:\n\(relay.stderr)")
            #expect(relay.stderr.contains("unknown directive"), "the refusal names the error: \(relay.stderr)")
            #expect(relay.isAlive)
            #expect(try Self.status(relay, "127.0.0.1:\(second.port)") == 200)
            #expect(throws: Never.self) { try established.roundTrip() }
        }
    
        @Test("after SIGHUP a kept-alive connection's next request meets the new rules")
        func keptAliveConnectionFollowsTheReload() throws {
            let origin = try HTTPOrigin()
            let relay = try RelayProcess(config: RelayConfigText.proxy(["server 127.0.0.1:\(origin.port)"]))
            defer { relay.stop() }
            let request = "GET http://127.0.0.1:\(origin.port)/x HTTP/1.1\r\nHost: x\r\n\r\n"
            let (first, socket) = try ProxyClient.exchange(relayPort: relay.proxyPort, request)
            defer { socket.close() }
            #expect(first.status == 200)

            let denied = relay.configText + "deny 127.0.0.1:\(origin.port)\n"
            try denied.write(toFile: relay.configPath, atomically: true, encoding: .utf8)
            kill(relay.pid, SIGHUP)
            #expect(Self.waitForLog(relay, "dynrelay: reloaded", count: 1), "stderr:\n\(relay.stderr)")

            try socket.write(request)
            let second = try ProxyClient.readResponse(socket)
            Expect.refusal(second, status: 403, reason: "denied")
            #expect(origin.requests.count == 1, "the denied request must not reach the origin")
        }
    }
}
